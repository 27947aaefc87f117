//! [`Session::switch`]: the same session, continued by another agent kind (or the flow).

use agents::AgentFactory;

use super::{Runner, Session, SessionError, Target};

impl Session {
    /// Continues the session as `target` (another agent kind, or the planning flow), with its
    /// workspace and conversation: an agent that takes over gets the memory of the one before
    /// (a flow keeps none across tasks, so one that hands over passes nothing on). A recorded
    /// session stays the same stored session, now of `target` (what a later resume builds);
    /// an unrecorded one starts a new journal. `factory` builds the new agent (its workspace
    /// is replaced by the session's); the old one is shut down once the new one is built.
    ///
    /// Only between runs: the session must not be running.
    ///
    /// # Errors
    ///
    /// The new agent cannot be built, or the store cannot be written: the session is then
    /// left as it was (in the store too).
    pub async fn switch(
        &mut self,
        factory: &AgentFactory,
        target: Target,
    ) -> Result<(), SessionError> {
        if target == self.target {
            return Ok(());
        }
        let previous = self.target;
        let next = match (&self.recorder, self.store().cloned()) {
            (Some(recorder), Some(store)) => {
                let id = recorder.id().to_owned();
                // What a resume builds is what the store names: named first, and named back
                // when the new agent cannot be built.
                store.set_agent(&id, target.as_str()).await?;
                match Session::resume(factory, &store, &id).await {
                    Ok(next) => next,
                    Err(error) => {
                        if let Err(undo) = store.set_agent(&id, previous.as_str()).await {
                            tracing::warn!(%undo, "cannot name the session's agent back");
                        }
                        return Err(error);
                    }
                }
            }
            _ => {
                let factory = factory.clone().with_workspace(&self.workspace);
                let mut next = Session::start(&factory, target).await?;
                let memory = match &self.runner {
                    Some(Runner::Agent(built)) => built.agent().base().memory.messages().to_vec(),
                    _ => Vec::new(),
                };
                if let Some(Runner::Agent(built)) = &mut next.runner {
                    built.agent_mut().base_mut().memory.add_messages(memory);
                }
                next
            }
        };
        let old = std::mem::replace(self, next);
        if let Err(error) = old.close().await {
            tracing::warn!(%error, "closing the agent switched from");
        }
        tracing::info!(from = %previous, to = %target, "the session switched its agent");
        Ok(())
    }
}
