//! mmaemu-reports: what the recordings say beyond pass and fail, over the harness: the regression report ([`report`]:
//! JSON, Markdown, HTML, its baseline diff and its rendering). The fits from recorded data live in `mmaemu-fit`.

pub mod report;
