//! Test support shared by the cache's unit tests (`refusals.rs`) and `tests/integration/cache.rs` (which
//! includes this file by path): a `tracing` layer that records what the cache logged.

use std::sync::{Arc, Mutex};

use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::layer::Context;
use tracing_subscriber::Layer;

/// `(level, message)` of every event the cache logged.
pub(crate) type Events = Arc<Mutex<Vec<(Level, String)>>>;

/// Records each event of `codemode_runtime::cache` (its level and message) into its [`Events`].
pub(crate) struct Capture(pub(crate) Events);

impl<S: Subscriber> Layer<S> for Capture {
    fn on_event(&self, event: &Event<'_>, _: Context<'_, S>) {
        if !event
            .metadata()
            .target()
            .starts_with("codemode_runtime::cache")
        {
            return;
        }
        struct Message(String);
        impl Visit for Message {
            fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
                if field.name() == "message" {
                    self.0 = format!("{value:?}");
                }
            }
        }
        let mut message = Message(String::new());
        event.record(&mut message);
        self.0
            .lock()
            .unwrap()
            .push((*event.metadata().level(), message.0));
    }
}
