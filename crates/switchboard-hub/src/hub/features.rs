//! Everything but tools across servers: resources, resource templates,
//! prompts, skills (the skills extension) and completion, through each
//! ready server's [`Client`].
//!
//! Unlike tools, these lists are not kept by the hub: each listing asks
//! every ready server at once, so it is as fresh as the servers' answers.
//!
//! A listing never fails as a whole. A server that is not ready, or that
//! does not declare the capability, has nothing to list and is skipped; a
//! server whose listing fails is logged (`tracing::warn!`) and reported in
//! [`HubListing::failed`] with its error, beside every other server's
//! items.

use std::collections::BTreeMap;
use std::sync::Arc;

use switchboard::types::request::{self as rq, Request};
use switchboard::types::{
    CompleteRequestParams, CompleteResult, GetPromptRequestParams, GetPromptResult, Prompt,
    ReadResourceRequestParams, ReadResourceResult, RequestOutcome, Resource, ResourceTemplate,
    SkillEntry,
};
use switchboard::{
    Client, Error as ClientError, RawList, RequestOptions, Skill, SkillFileContents,
};
use tokio::task::JoinSet;
use tracing::Instrument;

use super::state::ServerState;
use super::{Hub, HubError, namespaced};

/// A resource in the hub's aggregated list.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct HubResource {
    /// The server offering it (what [`Hub::read_resource`] takes).
    pub server: String,
    /// The resource as the server describes it.
    pub resource: Resource,
}

/// A resource template in the hub's aggregated list.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct HubResourceTemplate {
    /// The server offering it.
    pub server: String,
    /// The template as the server describes it.
    pub template: ResourceTemplate,
}

/// A prompt in the hub's aggregated list.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct HubPrompt {
    /// The hub-wide name, `server__prompt`, made like a tool's by
    /// [`namespaced`] (for showing prompts of many servers in one menu);
    /// when two servers' prompts want the same one, the later server's
    /// (in configuration order) is `server__prompt_HASH`, as a tool's.
    pub name: String,
    /// The server offering it (what [`Hub::get_prompt`] takes, with the
    /// prompt's own name).
    pub server: String,
    /// The prompt as the server describes it (its own `name`).
    pub prompt: Prompt,
}

/// A skill in the hub's aggregated list (the skills extension). Listing
/// reads none of its files.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct HubSkill {
    /// The hub-wide name, `server__skill`, made like a tool's by
    /// [`namespaced`] (for offering skills of many servers to one model).
    pub name: String,
    /// The server offering it (what [`Hub::load_skill`] takes).
    pub server: String,
    /// The skill as the server lists it.
    pub entry: SkillEntry,
}

/// What a listing across servers found: the items of every server that
/// answered, in configuration order, and the servers whose listing failed.
#[derive(Debug)]
#[non_exhaustive]
pub struct HubListing<T> {
    /// The items, server by server in configuration order, each server's
    /// in its own order.
    pub items: Vec<T>,
    /// One error per server whose listing failed ([`HubError::Request`],
    /// naming the server; the client's error is its source), in
    /// configuration order. Their items are missing from `items`.
    pub failed: Vec<HubError>,
}

impl<T> Default for HubListing<T> {
    fn default() -> Self {
        Self {
            items: Vec::new(),
            failed: Vec::new(),
        }
    }
}

/// Which capability a listing needs.
#[derive(Clone, Copy)]
enum Feature {
    Resources,
    Prompts,
    Skills,
}

impl Feature {
    fn declared(self, client: &Client) -> bool {
        let capabilities = client.capabilities();
        match self {
            Feature::Resources => capabilities.resources.is_some(),
            Feature::Prompts => capabilities.prompts.is_some(),
            Feature::Skills => client.offers_skills(),
        }
    }
}

impl Hub {
    /// The live [`Client`] of a ready server (a cheap clone), for anything
    /// the hub does not offer itself. It stays usable while that
    /// connection lasts; after a reconnection, ask again.
    ///
    /// # Errors
    /// [`HubError::UnknownServer`]; [`HubError::Unavailable`] when the
    /// server is not ready.
    pub fn client(&self, server: &str) -> Result<Client, HubError> {
        let slot = self.slot(server)?;
        let view = slot.view.borrow();
        match (&view.state, &view.client) {
            (ServerState::Ready, Some(client)) => Ok(client.clone()),
            (state, _) => Err(HubError::Unavailable {
                server: server.into(),
                state: state.clone(),
            }),
        }
    }

    /// Every resource of every ready server that declares the `resources`
    /// capability, asked of all of them at once (see the module's notes
    /// on what is skipped and what is reported).
    ///
    /// # Cancel safety
    /// Dropping the future cancels every listing under way.
    pub async fn resources(&self) -> HubListing<HubResource> {
        self.resources_by_server()
            .await
            .cloned(|server, resource| HubResource { server, resource })
    }

    /// [`Hub::resources`] as each server's client listed them (its own
    /// list, shared), for the gateway to write without a copy.
    pub(crate) async fn resources_by_server(&self) -> ByServer<Arc<[Resource]>> {
        self.list_across(
            Feature::Resources,
            rq::ListResources::METHOD,
            |client| async move { client.list_resources_shared().await },
        )
        .await
    }

    /// Every resource template of every ready server that declares the
    /// `resources` capability, as [`Hub::resources`].
    ///
    /// # Cancel safety
    /// Dropping the future cancels every listing under way.
    pub async fn resource_templates(&self) -> HubListing<HubResourceTemplate> {
        self.resource_templates_by_server()
            .await
            .cloned(|server, template| HubResourceTemplate { server, template })
    }

    /// [`Hub::resource_templates`] as [`Hub::resources_by_server`].
    pub(crate) async fn resource_templates_by_server(&self) -> ByServer<Arc<[ResourceTemplate]>> {
        self.list_across(
            Feature::Resources,
            rq::ListResourceTemplates::METHOD,
            |client| async move { client.list_resource_templates_shared().await },
        )
        .await
    }

    /// Every prompt of every ready server that declares the `prompts`
    /// capability, as [`Hub::resources`], each also named by
    /// [`namespaced`].
    ///
    /// # Cancel safety
    /// Dropping the future cancels every listing under way.
    pub async fn prompts(&self) -> HubListing<HubPrompt> {
        let (listing, names) = self.prompts_by_server().await;
        let mut names = names.into_iter();
        listing.cloned(|server, prompt| HubPrompt {
            name: names.next().unwrap_or_default(),
            server,
            prompt,
        })
    }

    /// [`Hub::prompts`] as [`Hub::resources_by_server`], with the
    /// prompts' hub-wide names in the same order.
    pub(crate) async fn prompts_by_server(&self) -> (ByServer<Arc<[Prompt]>>, Vec<String>) {
        let listing = self
            .list_across(
                Feature::Prompts,
                rq::ListPrompts::METHOD,
                |client| async move { client.list_prompts_shared().await },
            )
            .await;
        let names = self.served_names(listing.lists.iter().flat_map(|(server, prompts)| {
            prompts.iter().map(|p| (server.as_str(), p.name.as_str()))
        }));
        (listing, names)
    }

    /// [`Hub::resources`] as each server wrote them
    /// ([`Client::list_raw`]), for the gateway to write entry by entry:
    /// never the whole list parsed at once, and the clients' own lists
    /// left alone.
    pub(crate) async fn resources_raw(&self) -> ByServer<RawList<Resource>> {
        self.list_across(
            Feature::Resources,
            rq::ListResources::METHOD,
            |client| async move { client.list_raw::<rq::ListResources>().await },
        )
        .await
    }

    /// [`Hub::resource_templates`] as [`Hub::resources_raw`].
    pub(crate) async fn resource_templates_raw(&self) -> ByServer<RawList<ResourceTemplate>> {
        self.list_across(
            Feature::Resources,
            rq::ListResourceTemplates::METHOD,
            |client| async move { client.list_raw::<rq::ListResourceTemplates>().await },
        )
        .await
    }

    /// [`Hub::prompts`] as [`Hub::resources_raw`], with the prompts'
    /// hub-wide names in the same order.
    pub(crate) async fn prompts_raw(&self) -> (ByServer<RawList<Prompt>>, Vec<String>) {
        let listing = self
            .list_across(
                Feature::Prompts,
                rq::ListPrompts::METHOD,
                |client| async move { client.list_raw::<rq::ListPrompts>().await },
            )
            .await;
        // Only the names, each read from its prompt's text (every prompt
        // is parsed whole once more as it is written).
        #[derive(serde::Deserialize)]
        struct Named {
            name: String,
        }
        let own: Vec<(usize, String)> = listing
            .lists
            .iter()
            .enumerate()
            .flat_map(|(at, (_, prompts))| {
                prompts
                    .items()
                    .filter_map(|text| serde_json::from_str::<Named>(text).ok())
                    .map(move |p| (at, p.name))
            })
            .collect();
        let names = self.served_names(
            own.iter()
                .map(|(at, name)| (listing.lists[*at].0.as_str(), name.as_str())),
        );
        (listing, names)
    }

    /// Hub-wide names for `(server, own name)` entries other than tools
    /// (prompts, resource templates), by the tools' rule
    /// ([`served_names`](super::routes::served_names)), each server's
    /// prefix as configured.
    pub(crate) fn served_names<'a>(
        &self,
        entries: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Vec<String> {
        let shared = &self.inner.shared;
        super::routes::served_names(
            entries
                .into_iter()
                .map(|(server, own)| (server, own, shared.prefix_of(server))),
        )
        .into_iter()
        .map(|(name, _)| name)
        .collect()
    }

    /// Every skill of every ready server that declares the skills
    /// extension, as [`Hub::resources`], each also named by
    /// [`namespaced`]. No skill file is read.
    ///
    /// # Cancel safety
    /// Dropping the future cancels every listing under way.
    pub async fn skills(&self) -> HubListing<HubSkill> {
        self.list_across(
            Feature::Skills,
            rq::ListSkills::METHOD,
            |client| async move { client.list_skills().await },
        )
        .await
        .map(|server, entry| HubSkill {
            name: namespaced(&server, entry.name().unwrap_or_default()),
            server,
            entry,
        })
    }

    /// `server`'s entry of the skill `uri` (`skills/get`; reads no file).
    ///
    /// # Errors
    /// As [`Hub::read_resource`], for the skills extension; an unknown
    /// URI is the server's -32602.
    ///
    /// # Cancel safety
    /// Dropping the future cancels the request.
    pub async fn get_skill(&self, server: &str, uri: &str) -> Result<SkillEntry, HubError> {
        self.request(server, rq::GetSkill::METHOD, |client| async move {
            client.get_skill(uri).await
        })
        .await
    }

    /// Loads one of `server`'s skills: reads its `SKILL.md` and verifies
    /// it against `entry` ([`Client::load_skill`]).
    ///
    /// # Errors
    /// As [`Hub::read_resource`], for the skills extension; a skill whose
    /// file does not match its entry is [`HubError::Request`] whose source
    /// is the client's [`switchboard::Error::Skill`].
    ///
    /// # Cancel safety
    /// Dropping the future cancels the read.
    pub async fn load_skill(&self, server: &str, entry: &SkillEntry) -> Result<Skill, HubError> {
        self.request(server, rq::ReadResource::METHOD, |client| async move {
            client.load_skill(entry).await
        })
        .await
    }

    /// Reads and verifies one file of a skill loaded from `server`
    /// ([`Client::read_skill_file`]).
    ///
    /// # Errors
    /// As [`Hub::load_skill`].
    ///
    /// # Cancel safety
    /// Dropping the future cancels the read.
    pub async fn read_skill_file(
        &self,
        server: &str,
        skill: &Skill,
        uri: &str,
    ) -> Result<SkillFileContents, HubError> {
        self.request(server, rq::ReadResource::METHOD, |client| async move {
            client.read_skill_file(skill, uri).await
        })
        .await
    }

    /// A skill loaded from `server`: its other files' URIs, from its
    /// listing or, for a `dynamic` skill, its directory
    /// ([`Client::skill_files`]).
    ///
    /// # Errors
    /// As [`Hub::load_skill`].
    ///
    /// # Cancel safety
    /// Dropping the future cancels the reads.
    pub async fn skill_files(&self, server: &str, skill: &Skill) -> Result<Vec<String>, HubError> {
        self.request(server, rq::ReadDirectory::METHOD, |client| async move {
            client.skill_files(skill).await
        })
        .await
    }

    /// Reads `uri` from `server`.
    ///
    /// # Errors
    /// [`HubError::UnknownServer`]; [`HubError::Unavailable`] when the
    /// server is not ready; [`HubError::CapabilityMissing`] when it does
    /// not declare `resources` (nothing is sent); [`HubError::Request`]
    /// for any other failure (a missing resource is the server's error,
    /// code -32002 or, in 2026-07-28, -32602).
    ///
    /// # Cancel safety
    /// Dropping the future cancels the read.
    pub async fn read_resource(
        &self,
        server: &str,
        uri: impl Into<String>,
    ) -> Result<ReadResourceResult, HubError> {
        let params = ReadResourceRequestParams {
            uri: uri.into(),
            ..Default::default()
        };
        self.request(server, rq::ReadResource::METHOD, |client| async move {
            client
                .read_resource_with(&params, RequestOptions::default())
                .await
        })
        .await
    }

    /// Gets `server`'s prompt `name` (its own name, not the hub-wide one)
    /// with its arguments filled in.
    ///
    /// # Errors
    /// As [`Hub::read_resource`], for the `prompts` capability.
    ///
    /// # Cancel safety
    /// Dropping the future cancels the request.
    pub async fn get_prompt(
        &self,
        server: &str,
        name: impl Into<String>,
        arguments: Option<BTreeMap<String, String>>,
    ) -> Result<GetPromptResult, HubError> {
        let params = GetPromptRequestParams {
            name: name.into(),
            arguments: arguments.map(|a| a.into_iter().collect()),
            ..Default::default()
        };
        self.request(server, rq::GetPrompt::METHOD, |client| async move {
            client
                .get_prompt_with(&params, RequestOptions::default())
                .await
        })
        .await
    }

    /// One round of `prompts/get` (2026-07-28): `params` as the caller
    /// gives them (with the answers and `requestState` of a round
    /// before), the server's `input_required` result handed back rather
    /// than answered by the client's handlers.
    ///
    /// # Errors
    /// As [`Hub::get_prompt`].
    ///
    /// # Cancel safety
    /// Dropping the future cancels the request.
    pub async fn get_prompt_round(
        &self,
        server: &str,
        params: GetPromptRequestParams,
        options: RequestOptions,
    ) -> Result<RequestOutcome<GetPromptResult>, HubError> {
        self.request(server, rq::GetPrompt::METHOD, |client| async move {
            client.get_prompt_once(&params, options).await
        })
        .await
    }

    /// Asks `server` for completions of a prompt or resource-template
    /// argument.
    ///
    /// # Errors
    /// As [`Hub::read_resource`], for the `completions` capability.
    ///
    /// # Cancel safety
    /// Dropping the future cancels the request.
    pub async fn complete(
        &self,
        server: &str,
        params: &CompleteRequestParams,
    ) -> Result<CompleteResult, HubError> {
        self.request(server, rq::Complete::METHOD, |client| async move {
            client.complete(params).await
        })
        .await
    }

    /// Sends one request through `server`'s live client, mapping the
    /// client's errors to the hub's.
    async fn request<T, F, Fut>(
        &self,
        server: &str,
        method: &'static str,
        send: F,
    ) -> Result<T, HubError>
    where
        F: FnOnce(Client) -> Fut,
        Fut: Future<Output = Result<T, ClientError>>,
    {
        let client = self.client(server)?;
        let span = tracing::info_span!("mcp.request", server, method);
        send(client)
            .instrument(span)
            .await
            .map_err(|error| request_error(server, method, error))
    }

    /// Runs `list` on every ready server that declares `feature`, all at
    /// once, and gathers the answers in configuration order.
    async fn list_across<C, F, Fut>(
        &self,
        feature: Feature,
        method: &'static str,
        list: F,
    ) -> ByServer<C>
    where
        C: Send + 'static,
        F: Fn(Client) -> Fut,
        Fut: Future<Output = Result<C, ClientError>> + Send + 'static,
    {
        // Owned by this future: dropping it aborts the listings (and the
        // client cancels their requests).
        let mut listings = JoinSet::new();
        for (index, slot) in self.inner.shared.slots().iter().enumerate() {
            let client = {
                let view = slot.view.borrow();
                match (&view.state, &view.client) {
                    (ServerState::Ready, Some(client)) if feature.declared(client) => {
                        client.clone()
                    }
                    _ => continue,
                }
            };
            let server = slot.config.name.clone();
            let span = tracing::info_span!("mcp.request", server = %server, method);
            let listing = list(client).instrument(span);
            listings.spawn(async move { (index, server, listing.await) });
        }
        let mut answers = Vec::with_capacity(listings.len());
        while let Some(joined) = listings.join_next().await {
            match joined {
                Ok(answer) => answers.push(answer),
                Err(error) if error.is_panic() => std::panic::resume_unwind(error.into_panic()),
                // Nothing aborts them but dropping the set.
                Err(_) => {}
            }
        }
        answers.sort_by_key(|(index, _, _)| *index);
        let mut listing = ByServer {
            lists: Vec::with_capacity(answers.len()),
            failed: Vec::new(),
        };
        for (_, server, answer) in answers {
            match answer {
                Ok(list) => listing.lists.push((server, list)),
                Err(error) => {
                    let error = request_error(&server, method, error);
                    tracing::warn!(server, method, "listing failed: {}", chain(&error));
                    listing.failed.push(error);
                }
            }
        }
        listing
    }
}

/// A listing across servers, server by server: each server that answered
/// (in configuration order) with its list as its client gave it, and one
/// error per server whose listing failed.
pub(crate) struct ByServer<C> {
    pub(crate) lists: Vec<(String, C)>,
    pub(crate) failed: Vec<HubError>,
}

impl<T> ByServer<Vec<T>> {
    /// Every item, server by server, made into a hub entry by `f`.
    fn map<U>(self, mut f: impl FnMut(String, T) -> U) -> HubListing<U> {
        let count = self.lists.iter().map(|(_, list)| list.len()).sum();
        let mut items = Vec::with_capacity(count);
        for (server, list) in self.lists {
            items.extend(list.into_iter().map(|item| f(server.clone(), item)));
        }
        HubListing {
            items,
            failed: self.failed,
        }
    }
}

impl<T: Clone> ByServer<Arc<[T]>> {
    /// Every item, server by server, copied into a hub entry by `f` (the
    /// clients keep their lists).
    fn cloned<U>(self, mut f: impl FnMut(String, T) -> U) -> HubListing<U> {
        let count = self.lists.iter().map(|(_, list)| list.len()).sum();
        let mut items = Vec::with_capacity(count);
        for (server, list) in &self.lists {
            items.extend(list.iter().map(|item| f(server.clone(), item.clone())));
        }
        HubListing {
            items,
            failed: self.failed,
        }
    }
}

/// The hub's error for a client's failed request on `server`.
fn request_error(server: &str, method: &'static str, error: ClientError) -> HubError {
    match error {
        ClientError::CapabilityMissing { capability, .. } => HubError::CapabilityMissing {
            server: server.into(),
            capability,
            method,
        },
        error => HubError::Request {
            server: server.into(),
            method,
            source: Box::new(error),
        },
    }
}

/// An error and its causes, `: `-separated, for the log.
fn chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}
