//! JSON paths of input fields (`operations[3].files_read[0]`), named without allocating: a
//! path is a chain of borrowed parts, rendered to text only when its field is at fault.

use std::fmt;

#[derive(Clone, Copy, Debug)]
pub enum Field<'a> {
    /// A top-level field.
    Name(&'a str),
    /// A member of an object field.
    Member(&'a Field<'a>, &'a str),
    /// An item of an array field.
    Item(&'a Field<'a>, usize),
}

impl<'a> Field<'a> {
    pub fn member(&'a self, name: &'a str) -> Field<'a> {
        Field::Member(self, name)
    }

    pub fn item(&'a self, index: usize) -> Field<'a> {
        Field::Item(self, index)
    }
}

impl fmt::Display for Field<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Field::Name(name) => f.write_str(name),
            Field::Member(parent, name) => write!(f, "{parent}.{name}"),
            Field::Item(parent, index) => write!(f, "{parent}[{index}]"),
        }
    }
}

impl<'a> From<&'a str> for Field<'a> {
    fn from(name: &'a str) -> Self {
        Field::Name(name)
    }
}

impl<'a> From<&'a String> for Field<'a> {
    fn from(name: &'a String) -> Self {
        Field::Name(name)
    }
}

impl From<Field<'_>> for String {
    fn from(field: Field<'_>) -> Self {
        field.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_render_members_and_items() {
        let ops = Field::from("operations");
        let op = ops.item(3);
        let files = op.member("files_read");
        assert_eq!(files.item(0).to_string(), "operations[3].files_read[0]");
        assert_eq!(String::from(op.member("type")), "operations[3].type");
        assert_eq!(Field::from("project").to_string(), "project");
    }
}
