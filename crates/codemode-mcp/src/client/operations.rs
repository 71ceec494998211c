//! The resource and prompt requests of a [`ServerClient`] (`resources/list`,
//! `resources/templates/list`, `resources/read`, `prompts/list`, `prompts/get`), as the catalog's
//! resource and prompt operations call them (docs/contract/mcp.md#s7-2), and
//! `completion/complete`, `logging/setLevel`, `resources/subscribe` and
//! `resources/unsubscribe`, which `serve` with code mode off passes on (docs/mcp.md, "The
//! everything-server scenarios through `serve` with code mode off").

use rmcp::model::{ServerNotification, SubscriptionFilter};
use serde_json::{json, Map, Value};

use super::rounds::{without_result_type, Next};
use super::{send_raw_tracked, to_json, ServerClient};
use crate::error::ClientError;

impl ServerClient {
    /// `resources/list`: one page when `cursor` is given, else every page up to the cap, as
    /// `{resources: [...]}` (plus `nextCursor` when paging by hand).
    ///
    /// # Errors
    /// A [`ClientError`] of connecting or of any page.
    pub async fn list_resources(&self, cursor: Option<String>) -> Result<Value, ClientError> {
        self.list_for_guest("resources/list", "resources", cursor)
            .await
    }

    /// `resources/templates/list`, like [`ServerClient::list_resources`], as
    /// `{resourceTemplates: [...]}`.
    ///
    /// # Errors
    /// A [`ClientError`] of connecting or of any page.
    pub async fn list_resource_templates(
        &self,
        cursor: Option<String>,
    ) -> Result<Value, ClientError> {
        self.list_for_guest("resources/templates/list", "resourceTemplates", cursor)
            .await
    }

    /// `prompts/list`, like [`ServerClient::list_resources`], as `{prompts: [...]}`.
    ///
    /// # Errors
    /// A [`ClientError`] of connecting or of any page.
    pub async fn list_prompts(&self, cursor: Option<String>) -> Result<Value, ClientError> {
        self.list_for_guest("prompts/list", "prompts", cursor).await
    }

    async fn list_for_guest(
        &self,
        method: &str,
        key: &str,
        cursor: Option<String>,
    ) -> Result<Value, ClientError> {
        if cursor.is_some() {
            return self.list_page(method, cursor).await;
        }
        let (items, warnings) = self.list_all(method, key).await?;
        for warning in warnings {
            tracing::warn!("{warning}");
        }
        Ok(json!({ key: items }))
    }

    /// `resources/read` of `uri`: the raw `{contents: [...]}`.
    ///
    /// # Errors
    /// A [`ClientError`] of connecting or of the request (retried once on a rejected session).
    pub async fn read_resource(&self, uri: &str) -> Result<Value, ClientError> {
        self.read_resource_for(uri, None).await
    }

    /// [`ServerClient::read_resource`] for the call `call` (a code-mode run's nested call, or
    /// `serve`'s `resources/read` with code mode off): in `codemode serve` the server's
    /// elicitation and sampling requests meanwhile go to that call's MCP client (`forward.rs`),
    /// as for [`ServerClient::call_tool_for`].
    ///
    /// # Errors
    /// As [`ServerClient::read_resource`].
    pub async fn read_resource_for(
        &self,
        uri: &str,
        call: Option<&codemode_bridge::ToolCall>,
    ) -> Result<Value, ClientError> {
        self.raw_request("resources/read", uri, json!({ "uri": uri }), call)
            .await
    }

    /// `prompts/get` of `name` with string `arguments`: the raw `{description?, messages}`.
    ///
    /// # Errors
    /// A [`ClientError`] of connecting or of the request (retried once on a rejected session).
    pub async fn get_prompt(
        &self,
        name: &str,
        arguments: Option<Map<String, Value>>,
    ) -> Result<Value, ClientError> {
        self.get_prompt_for(name, arguments, None).await
    }

    /// [`ServerClient::get_prompt`] for the call `call`, as
    /// [`ServerClient::read_resource_for`].
    ///
    /// # Errors
    /// As [`ServerClient::get_prompt`].
    pub async fn get_prompt_for(
        &self,
        name: &str,
        arguments: Option<Map<String, Value>>,
        call: Option<&codemode_bridge::ToolCall>,
    ) -> Result<Value, ClientError> {
        let mut params = json!({ "name": name });
        if let Some(arguments) = arguments {
            params["arguments"] = Value::Object(arguments);
        }
        self.raw_request("prompts/get", name, params, call).await
    }

    /// `completion/complete` with `params` (`{ref, argument, context?}`, the reference in the
    /// server's own names) for the prompt or URI `subject`: the raw `{completion: {values,
    /// total?, hasMore?}}`.
    ///
    /// # Errors
    /// A [`ClientError`] of connecting or of the request (retried once on a rejected session).
    pub async fn complete(&self, subject: &str, params: Value) -> Result<Value, ClientError> {
        let timeout = self.options.call_timeout;
        to_json(
            self.request("completion/complete", Some(subject), |p| {
                send_raw_tracked(
                    p,
                    "completion/complete",
                    Some(params.clone()),
                    timeout,
                    None,
                    None,
                )
            })
            .await?,
        )
        .map(without_result_type)
    }

    /// `logging/setLevel` with `level` (`"debug"` … `"emergency"`): the server sends log
    /// messages of that level and above (`serve` with code mode off passes its clients' levels
    /// on: docs/mcp.md, "Logging and resource subscriptions").
    ///
    /// # Errors
    /// A [`ClientError`] of connecting or of the request (a server without the `logging`
    /// capability answers `-32601`).
    pub async fn set_log_level(&self, level: &str) -> Result<(), ClientError> {
        self.plain("logging/setLevel", None, json!({ "level": level }))
            .await
    }

    /// Subscribes to updates of `uri`: `resources/subscribe` over a legacy connection; over a
    /// 2026-07-28 one (which has no such method) a `subscriptions/listen` stream with the URI in
    /// its `resourceSubscriptions`. Either way the server's `notifications/resources/updated`
    /// go to the forwarder (`serve` with code mode off; `forward.rs`). A reconnection loses the
    /// subscription.
    ///
    /// # Errors
    /// A [`ClientError`] of connecting or of the request (the listen is acknowledged first).
    pub async fn subscribe_resource(&self, uri: &str) -> Result<(), ClientError> {
        let peer = self.live_peer().await?;
        if !crate::lifecycle::is_stateless(&peer) {
            return self
                .plain("resources/subscribe", Some(uri), json!({ "uri": uri }))
                .await;
        }
        let filter = SubscriptionFilter::builder()
            .resource_subscription(uri)
            .build();
        let mut subscription = self
            .request("subscriptions/listen", Some(uri), |p| {
                let filter = filter.clone();
                async move { p.listen(filter).await }
            })
            .await?;
        let forward = self.forward.clone();
        let server = self.name.clone();
        let reader = tokio::spawn(async move {
            while let Ok(Some(notification)) = subscription.next().await {
                if let (ServerNotification::ResourceUpdatedNotification(updated), Some(forward)) =
                    (notification, &forward)
                {
                    forward
                        .route_resource_updated(&server, updated.params)
                        .await;
                }
            }
        });
        let previous = self
            .resource_listens
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(uri.to_string(), reader.abort_handle());
        if let Some(previous) = previous {
            previous.abort();
        }
        Ok(())
    }

    /// Ends the subscription to `uri` ([`ServerClient::subscribe_resource`]): closes its
    /// `subscriptions/listen` stream, or sends `resources/unsubscribe` over a legacy connection.
    ///
    /// # Errors
    /// A [`ClientError`] of connecting or of the request.
    pub async fn unsubscribe_resource(&self, uri: &str) -> Result<(), ClientError> {
        let listening = self
            .resource_listens
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove(uri);
        if let Some(reader) = listening {
            // Dropping the subscription with its reader cancels the stream.
            reader.abort();
            return Ok(());
        }
        self.plain("resources/unsubscribe", Some(uri), json!({ "uri": uri }))
            .await
    }

    /// One request whose result is empty (`{}`).
    async fn plain(
        &self,
        method: &'static str,
        subject: Option<&str>,
        params: Value,
    ) -> Result<(), ClientError> {
        let timeout = self.options.call_timeout;
        self.request(method, subject, |p| {
            send_raw_tracked(p, method, Some(params.clone()), timeout, None, None)
        })
        .await?;
        Ok(())
    }

    /// `method` with `params` for the resource or prompt `name` (the `Mcp-Name` of the
    /// request), made for `call` (see [`ServerClient::read_resource_for`]): the raw result
    /// without its `resultType`. A 2026-07-28 server's
    /// `input_required` is answered as for `tools/call` (`rounds.rs`: each input request
    /// through the connection's handler, then the request again with `inputResponses` and the
    /// `requestState`, at most [`super::rounds::MAX_INPUT_ROUNDS`] times). Inside
    /// [`passing_through`](super::passthrough::passing_through) (`serve` with code mode off for
    /// a 2026-07-28 client) the round's `inputResponses` and `requestState` go with it, the
    /// upstream client's capabilities are declared, and an `input_required` answer is the
    /// result (the client answers it).
    async fn raw_request(
        &self,
        method: &'static str,
        name: &str,
        params: Value,
        call: Option<&codemode_bridge::ToolCall>,
    ) -> Result<Value, ClientError> {
        // While it is in flight, the server's elicitation and sampling requests may go to the
        // client of the calling MCP session (`forward.rs`).
        let _in_flight = self
            .forward
            .as_ref()
            .zip(call.and_then(|c| c.scope.session_id.as_deref()))
            .map(|(forward, session)| forward.call_started(&self.name, session));
        let timeout = self.options.call_timeout;
        let mut params = params;
        let pass = super::passthrough::current();
        if let Some(pass) = &pass {
            pass.apply(&mut params);
        }
        let meta = pass
            .as_ref()
            .and_then(super::passthrough::PassThrough::meta);
        let mut rounds = 0;
        loop {
            let result = to_json(
                self.request(method, Some(name), |p| {
                    send_raw_tracked(p, method, Some(params.clone()), timeout, None, meta.clone())
                })
                .await?,
            )?;
            if pass.is_some() {
                return Ok(without_result_type(result));
            }
            match self
                .after_answer(method, name, &params, result, rounds)
                .await?
            {
                // `after_answer` answers a task to a prompt or resource with an error.
                Next::Done(result) | Next::Task(result) => return Ok(result),
                Next::Retry(retry) => params = retry,
            }
            rounds += 1;
        }
    }
}
