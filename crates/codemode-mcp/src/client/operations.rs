//! The resource and prompt requests of a [`ServerClient`] (`resources/list`,
//! `resources/templates/list`, `resources/read`, `prompts/list`, `prompts/get`), as the catalog's
//! resource and prompt operations call them (docs/contract/mcp.md#s7-2), and
//! `completion/complete`, which `serve` with code mode off passes on (docs/mcp.md, "The
//! everything-server scenarios through `serve` with code mode off").

use serde_json::{json, Map, Value};

use super::rounds::without_result_type;
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
        self.raw_request("resources/read", uri, json!({ "uri": uri }))
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
        let mut params = json!({ "name": name });
        if let Some(arguments) = arguments {
            params["arguments"] = Value::Object(arguments);
        }
        self.raw_request("prompts/get", name, params).await
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

    /// `method` with `params` for the resource or prompt `name` (the `Mcp-Name` of the
    /// request), sent as is: the raw result without its `resultType`. Inside
    /// [`passing_through`](super::passthrough::passing_through) (`serve` with code mode off for
    /// a 2026-07-28 client) the round's `inputResponses` and `requestState` go with it, the
    /// upstream client's capabilities are declared, and an `input_required` answer is the
    /// result (the client answers it).
    async fn raw_request(
        &self,
        method: &'static str,
        name: &str,
        params: Value,
    ) -> Result<Value, ClientError> {
        let timeout = self.options.call_timeout;
        let mut params = params;
        let pass = super::passthrough::current();
        if let Some(pass) = &pass {
            pass.apply(&mut params);
        }
        let meta = pass
            .as_ref()
            .and_then(super::passthrough::PassThrough::meta);
        to_json(
            self.request(method, Some(name), |p| {
                send_raw_tracked(p, method, Some(params.clone()), timeout, None, meta.clone())
            })
            .await?,
        )
        .map(without_result_type)
    }
}
