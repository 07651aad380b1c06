//! mmaemu-reports: what the recordings say beyond pass and fail, over the harness: split-K reduction rules and split
//! envelopes established from recorded data alone ([`fit`]), and the regression report ([`report`]: JSON, Markdown,
//! HTML, its baseline diff and its rendering).

pub mod fit;
pub mod report;
