//! What the spool holds: one capture command per record, applied to Neo4j in log order.
//!
//! A record is the command's JSON, LZ4-compressed behind a one-byte tag. A batch of
//! operations repeats its field names for every operation, so compressed it is a fraction of
//! the bytes: every capture waits for its group's write and fsync, and fewer bytes make both
//! shorter. Records without the tag are plain JSON (what earlier versions wrote) and are
//! read as such.

use std::borrow::Cow;

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

/// First byte of a record holding LZ4-compressed JSON (plain JSON starts with `{`).
const LZ4_JSON: u8 = 1;
/// Largest JSON text a record may expand to; anything claiming more is corrupt.
const MAX_JSON_BYTES: usize = 256 * 1024 * 1024;

/// Why a spool record could not be read back as a command.
#[derive(Debug, thiserror::Error)]
pub enum DecodeError {
    #[error("the record's compressed JSON is corrupt: {0}")]
    Lz4(String),
    #[error("the record is not a command of this version: {0}")]
    Json(#[from] serde_json::Error),
}

impl Command {
    /// The spool record for this command.
    pub fn encode(&self) -> serde_json::Result<Vec<u8>> {
        let packed = lz4_flex::compress_prepend_size(&serde_json::to_vec(self)?);
        let mut record = Vec::with_capacity(1 + packed.len());
        record.push(LZ4_JSON);
        record.extend_from_slice(&packed);
        Ok(record)
    }

    /// The JSON text of a spool record.
    pub fn json(record: &[u8]) -> Result<Cow<'_, [u8]>, DecodeError> {
        match record.split_first() {
            Some((&LZ4_JSON, packed)) => {
                let claimed = Self::json_len(record);
                if claimed > MAX_JSON_BYTES {
                    return Err(DecodeError::Lz4(format!("claims {claimed} bytes")));
                }
                lz4_flex::decompress_size_prepended(packed)
                    .map(Cow::Owned)
                    .map_err(|e| DecodeError::Lz4(e.to_string()))
            }
            _ => Ok(Cow::Borrowed(record)),
        }
    }

    /// The length of a spool record's JSON text, without expanding it.
    pub fn json_len(record: &[u8]) -> usize {
        match record.split_first() {
            Some((&LZ4_JSON, packed)) => packed.get(..4).map_or(0, |n| {
                u32::from_le_bytes(n.try_into().expect("four bytes")) as usize
            }),
            _ => record.len(),
        }
    }

    /// Reads a spool record back.
    pub fn decode(record: &[u8]) -> Result<Self, DecodeError> {
        Ok(serde_json::from_slice(&Self::json(record)?)?)
    }

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
                parent: Some("p0".into()),
                spawned_by: Some("p0/toolu_1".into()),
                agent_type: Some("Explore".into()),
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
            let record = cmd.encode().unwrap();
            assert_eq!(Command::decode(&record).unwrap(), cmd);
            // What earlier versions wrote: plain JSON.
            let legacy = serde_json::to_vec(&cmd).unwrap();
            assert_eq!(Command::decode(&legacy).unwrap(), cmd);
        }
    }

    #[test]
    fn a_session_start_spooled_before_child_sessions_still_reads() {
        let old = br#"{"command":"start_session","id":"s","project":"p","agent":null,"task":"t","continues":null,"cwd":null,"at":5}"#;
        match Command::decode(old).unwrap() {
            Command::StartSession(s) => {
                assert_eq!((s.id.as_str(), s.at), ("s", 5));
                assert_eq!((s.parent, s.spawned_by, s.agent_type), (None, None, None));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_batch_of_operations_is_a_fraction_of_its_json() {
        let op = |i: usize| {
            serde_json::json!({
                "id": format!("op-{i}"), "type": "read", "target": format!("src/m{i}.rs"),
                "summary": format!("read module {i} to see what it exports"),
                "files_read": [], "files_modified": [], "triggered_by": null,
                "informs_belief": null, "effect": "supports", "weight": 1.0,
                "rationale": null, "role": null, "content": null, "todos": null,
                "status": "ok", "context": null, "at": 1_700_000_000_000i64 + i as i64,
                "tool": "Read"
            })
        };
        let batch = serde_json::json!({
            "command": "operations", "project": "p", "session_id": "s",
            "operations": (0..100).map(op).collect::<Vec<_>>()
        });
        let cmd: Command = serde_json::from_value(batch).unwrap();
        let json = serde_json::to_vec(&cmd).unwrap().len();
        let record = cmd.encode().unwrap();
        assert!(record.len() * 3 < json, "{} of {json} bytes", record.len());
        assert_eq!(Command::json_len(&record), json);
        assert_eq!(Command::decode(&record).unwrap(), cmd);
    }

    #[test]
    fn corrupt_records_are_errors_not_panics() {
        let record = Command::PurgeProject {
            project: "p".into(),
        }
        .encode()
        .unwrap();
        for bad in [
            &record[..1],
            &record[..3],
            &record[..record.len() - 2],
            &[LZ4_JSON, 0xff, 0xff, 0xff, 0x7f, 0][..],
            b"not json",
        ] {
            assert!(Command::decode(bad).is_err(), "{bad:?}");
        }
    }
}
