//! The approval policy of the confined code-running tools (`[permissions] approval`, issue 32):
//! which refusals of the confinement are seen ([`detect`]), who decides whether a refused
//! call runs again with more ([`SandboxGate`]), and the user's hooks around every call
//! ([`HookGate`]).

pub mod detect;
pub mod escalation;
mod gate;
mod hooks;
pub mod paths;
mod project;
mod switch;

pub use gate::{Approval, GateOptions, SandboxGate};
pub use hooks::HookGate;
pub use project::{project_denials, project_rules_path};
pub use switch::ApprovalSwitch;
