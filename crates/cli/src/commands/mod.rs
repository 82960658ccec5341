//! One module per command.

pub mod check;
pub mod conformance;
pub mod controller;
pub mod definitions;
pub mod describe;
pub mod gang;
pub mod get;
pub mod scaffold;
pub mod serve;
pub mod set;
pub mod validate;
pub mod version;
pub mod watch;
