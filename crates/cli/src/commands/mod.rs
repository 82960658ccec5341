//! One module per command.

pub mod conformance;
pub mod controller;
pub mod definitions;
pub mod describe;
pub mod gang;
pub mod get;
pub mod serve;
pub mod set;
pub mod validate;
pub mod watch;
