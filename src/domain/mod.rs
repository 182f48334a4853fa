//! Types and pure rules: what an operation, a decision or a memory is, the limits on input,
//! path normalisation, token counting, the time a query names, the parts of identifiers and
//! what stored text may show.
//! Nothing here touches the
//! network or the database.

pub mod budget;
pub mod compounds;
pub mod conviction;
pub mod field;
pub mod limits;
pub mod lucene;
pub mod operation;
pub mod passages;
pub mod paths;
pub mod record;
pub mod shown;
pub mod state;
pub mod tokens;
pub mod turn_text;
pub mod validate;
pub mod when;
