//! What the spool holds: one capture command per record, applied to Neo4j in log order.

use serde::{Deserialize, Serialize};

use crate::config::Encoding;
use crate::domain::operation::NewOperation;
use crate::domain::record::{NewClose, NewDecision, NewMemory, NewSession};

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Operations {
    pub project: String,
    pub session_id: String,
    pub operations: Vec<NewOperation>,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(tag = "command", rename_all = "snake_case")]
// Short-lived and serialised to the spool at once: the size of a variant does not matter.
#[allow(clippy::large_enum_variant)]
pub enum Command {
    StartSession(NewSession),
    CloseSession(NewClose),
    Operations(Operations),
    Decision(NewDecision),
    Memory(NewMemory),
    PurgeSession { project: String, session_id: String },
    PurgeProject { project: String },
}

impl Command {
    /// Operation ids this command writes (for triggered_by checks while it is in flight).
    pub fn operation_ids(&self) -> Vec<&str> {
        match self {
            Command::Operations(b) => b.operations.iter().map(|o| o.id.as_str()).collect(),
            Command::Decision(d) => d.operation.iter().map(|o| o.id.as_str()).collect(),
            _ => Vec::new(),
        }
    }

    /// Counts the tokens of every operation this command writes that is not counted yet.
    pub fn count_tokens(&mut self, encoding: Encoding) {
        match self {
            Command::Operations(b) => {
                for op in &mut b.operations {
                    op.count_tokens(encoding);
                }
            }
            Command::Decision(d) => {
                if let Some(op) = &mut d.operation {
                    op.count_tokens(encoding);
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::record::NewMemory;

    #[test]
    fn every_command_round_trips_through_the_spool_encoding() {
        let memory = NewMemory {
            id: "m".into(),
            project: "p".into(),
            session_id: Some("s".into()),
            kind: "fact".into(),
            content: "c".into(),
            confidence: 0.5,
            tokens: 3,
            at: 1,
        };
        let commands = vec![
            Command::StartSession(NewSession {
                id: "s".into(),
                project: "p".into(),
                agent: None,
                task: Some("t".into()),
                continues: None,
                cwd: None,
                at: 1,
            }),
            Command::CloseSession(NewClose {
                id: "s".into(),
                project: "p".into(),
                summary: None,
                next_steps: vec!["n".into()],
                status: "closed".into(),
                at: 2,
            }),
            Command::Operations(Operations {
                project: "p".into(),
                session_id: "s".into(),
                operations: vec![],
            }),
            Command::Memory(memory),
            Command::PurgeSession {
                project: "p".into(),
                session_id: "s".into(),
            },
            Command::PurgeProject {
                project: "p".into(),
            },
        ];
        for cmd in commands {
            let bytes = serde_json::to_vec(&cmd).unwrap();
            let back: Command = serde_json::from_slice(&bytes).unwrap();
            assert_eq!(back, cmd);
        }
    }
}
