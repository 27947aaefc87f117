//! The approval policy of the confined code-running tools (`[permissions] approval`, issue 32):
//! which refusals of the confinement are seen ([`detect`]), and who decides whether a refused
//! call runs again with more ([`SandboxGate`]).

pub mod detect;
mod gate;

pub use gate::{Approval, GateOptions, SandboxGate};
