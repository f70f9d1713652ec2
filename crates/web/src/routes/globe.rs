//! The Globe view of a search (spec §12): exposure only, free of charge.

use crate::html::escape;

/// The Globe section for the prefixed query `text`.
pub(crate) fn section(text: &str) -> String {
    format!(
        "<section class=\"globe\" aria-label=\"Globe\" data-query=\"{}\"></section>",
        escape(text)
    )
}
