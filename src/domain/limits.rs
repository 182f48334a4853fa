//! Size limits on everything that comes in. They are documented in the OpenAPI descriptions
//! and enforced by [`super::validate`] before anything is written.

pub const MAX_ID_CHARS: usize = 200;
pub const MAX_PROJECT_CHARS: usize = 128;
pub const MAX_AGENT_CHARS: usize = 100;
pub const MAX_OPERATIONS_PER_BATCH: usize = 1_000;
pub const MAX_SUMMARY_CHARS: usize = 4_096;
pub const MAX_CONTENT_CHARS: usize = 65_536;
pub const MAX_TARGET_CHARS: usize = 2_048;
pub const MAX_PATH_CHARS: usize = 1_024;
pub const MAX_FILES_PER_OPERATION: usize = 200;
pub const MAX_TODOS: usize = 200;
pub const MAX_TODO_CHARS: usize = 2_000;
pub const MAX_CONTEXT_BYTES: usize = 16_384;
pub const MAX_SUBJECT_CHARS: usize = 512;
pub const MAX_CHOICE_CHARS: usize = 4_096;
pub const MAX_RATIONALE_CHARS: usize = 16_384;
pub const MAX_ALTERNATIVES: usize = 50;
pub const MAX_NEXT_STEPS: usize = 100;
pub const MAX_BELIEF_REFS: usize = 50;
