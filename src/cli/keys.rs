//! `cairn keys create|list|revoke`: API keys, straight in Neo4j (no running server needed).

use anyhow::Context;
use clap::{Args, Subcommand};

use crate::auth::{self, Scope};
use crate::config::Neo4jSettings;
use crate::domain::validate;
use crate::graph::{keys, schema, Store};

#[derive(Args, Debug)]
pub struct KeysArgs {
    #[command(subcommand)]
    pub action: KeysAction,
    #[command(flatten)]
    pub neo4j: Neo4jSettings,
}

#[derive(Subcommand, Debug)]
pub enum KeysAction {
    /// Create a key; the key itself is printed alone on the last line (shown once, stored hashed).
    Create {
        #[arg(long, env = "CAIRN_PROJECT")]
        project: String,
        #[arg(long, value_enum)]
        scope: Scope,
        /// A note on what the key is for.
        #[arg(long)]
        label: Option<String>,
    },
    /// List a project's keys (ids, scopes, revocation; never the secrets).
    List {
        #[arg(long, env = "CAIRN_PROJECT")]
        project: String,
    },
    /// Revoke a key by id.
    Revoke {
        #[arg(long, env = "CAIRN_PROJECT")]
        project: String,
        id: String,
    },
}

pub async fn run(args: KeysArgs) -> anyhow::Result<i32> {
    let store = Store::connect(&args.neo4j).context("invalid Neo4j settings")?;
    let hint = || {
        format!(
            "could not reach Neo4j at {}; is it running (scripts/neo4j-local status)?",
            args.neo4j.uri
        )
    };
    if schema::version(&store).await.with_context(hint)? != Some(schema::SCHEMA_VERSION) {
        schema::apply(&store, args.neo4j.embed_dimensions)
            .await
            .with_context(hint)?;
    }
    match args.action {
        KeysAction::Create {
            project,
            scope,
            label,
        } => {
            let project = validate::project("project", &project)
                .map_err(|e| anyhow::anyhow!("{}", e.public_message()))?;
            let key = auth::mint();
            keys::create(
                &store,
                &keys::NewKey {
                    id: &key.id,
                    project: &project,
                    scope: scope.as_str(),
                    hash: &key.hash,
                    label: label.as_deref(),
                    actor: "cli",
                },
            )
            .await
            .with_context(hint)?;
            eprintln!(
                "created {} key {} for project {project}; it is shown only now:",
                scope.as_str(),
                key.id
            );
            println!("{}", key.token);
            Ok(0)
        }
        KeysAction::List { project } => {
            let list = keys::list(&store, &project).await.with_context(hint)?;
            if list.is_empty() {
                eprintln!("no keys for project {project}");
            }
            for k in list {
                let state = if k.revoked_at.is_some() {
                    "revoked"
                } else {
                    "active"
                };
                let created = chrono::DateTime::from_timestamp_millis(k.created_at)
                    .map(|t| t.to_rfc3339())
                    .unwrap_or_default();
                println!(
                    "{}\t{}\t{state}\t{created}\t{}",
                    k.id,
                    k.scope,
                    k.label.unwrap_or_default()
                );
            }
            Ok(0)
        }
        KeysAction::Revoke { project, id } => {
            if keys::revoke(&store, &project, &id, "cli")
                .await
                .with_context(hint)?
            {
                eprintln!("revoked key {id} of project {project}");
                Ok(0)
            } else {
                eprintln!("no active key {id} in project {project}");
                Ok(1)
            }
        }
    }
}
