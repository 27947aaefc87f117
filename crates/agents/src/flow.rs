//! PlanningFlow: being written.
