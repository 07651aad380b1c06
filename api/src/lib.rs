//! mmaemu-api: the library's front door. It owns the backend registry ([`registry`]: which engine a call runs on,
//! self-checks, the CUDA gate), every `MMAEMU_*` variable ([`env`]), and hands out the process's catalogue of
//! loaded platform bundles and the model's types, so that the CLI, the Python package and the tests import one crate.

// The catalogue itself (and the bundle loader behind it) lives in `mmaemu_datasets::platform`; this crate re-exports
// it so that callers need not know where it is kept.

pub mod env;
pub mod registry;

pub use mmaemu_datasets::platform::{
    catalogue, is_bundle_arg, load_profile, register_env_platforms, register_platform, PLATFORMS_ENV,
};
pub use mmaemu_kernels as kernels;
pub use mmaemu_model as model;
pub use mmaemu_model::{
    accumulate, dot, gemm, Catalogue, Category, Chain, Epilogue, Error, Format, Operands, OutDtype, Plan, Preset,
    Profile, Scheme, SplitK,
};
pub use mmaemu_trace as trace;
pub use registry::{registry, Availability, OnPlacement, Placement, Registry};
