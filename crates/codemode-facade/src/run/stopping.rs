//! Parking every run in flight when the process stops into a durable store
//! ([`crate::code_mode::CodeMode::park_in_flight`]; docs/deployment.md, "Stopping").

use std::future::Future;

use super::Run;

impl Run {
    /// Makes the run park at its next wait once `signal` reads `true`.
    pub(crate) fn set_park_signal(&mut self, signal: tokio::sync::watch::Receiver<bool>) {
        self.park_now = Some(signal);
    }

    /// `true` once the process asked its runs to park.
    pub(super) fn park_requested(&self) -> bool {
        self.park_now
            .as_ref()
            .is_some_and(|signal| *signal.borrow())
    }

    /// Resolves once the process asks its runs to park; never without a signal.
    pub(super) fn parking(&self) -> impl Future<Output = ()> + Send + 'static {
        let mut park_now = self.park_now.clone();
        async move {
            match park_now.as_mut() {
                Some(signal) => drop(signal.wait_for(|park| *park).await),
                None => std::future::pending().await,
            }
        }
    }
}
