//! The quick index appended to the `exec` description (docs/contract/surface.md#s2-5).

use crate::js::{json_string, utf16_len};

/// Hard bound of the rendered index, in UTF-16 code units.
pub const QUICK_INDEX_MAX_CHARS: usize = 8000;

/// The index heading (four lines, joined with `\n`).
pub const QUICK_INDEX_HEADING: &str =
    "OpenClaw/plugin tool quick index (exact ids; descriptions are intentionally deferred):\n\
Each line is `id input -> output`; `-> ?` means unknown.\n\
OUTPUT DECLARED RULE: use declared fields for dependent calls in the first exec.\n\
OUTPUT UNKNOWN RULE: return the raw tool value unchanged; inspect or map it only in a later exec.";

/// The footer when every line is shown.
pub const QUICK_INDEX_COMPLETE_FOOTER: &str =
    "Use these exact ids with tools.callValue; use ALL_TOOLS or tools.search inside exec when lookup is ambiguous.";

/// The footer when `omitted > 0` lines were left out.
pub fn quick_index_footer(omitted: usize) -> String {
    if omitted > 0 {
        format!(
            "{omitted} additional OpenClaw/plugin tools omitted from this prompt index. Use ALL_TOOLS or tools.search inside exec to find them."
        )
    } else {
        QUICK_INDEX_COMPLETE_FOOTER.to_string()
    }
}

/// One index line: `- ${JSON.stringify(id)} ${input} -> ${output ?? "?"}`.
pub fn quick_index_line(id: &str, input: &str, output: Option<&str>) -> String {
    format!(
        "- {} {} -> {}",
        json_string(id),
        input,
        output.unwrap_or("?")
    )
}

/// Renders the index from lines already in index order (declared output first, then id).
///
/// `None` when there are no lines. Otherwise `[heading, ...kept, "", footer].join("\n")` with at
/// most [`QUICK_INDEX_MAX_CHARS`] UTF-16 units: all lines when they fit, else a greedy fit that
/// skips (rather than stops at) a line that does not fit, the footer counting the omitted lines
/// (docs/contract/surface.md#s2-5 steps 1–4). Linear in the total length of the lines.
pub fn render_quick_index(lines: &[String]) -> Option<String> {
    if lines.is_empty() {
        return None;
    }
    let total = lines.len();
    let heading_len = utf16_len(QUICK_INDEX_HEADING);
    let lens: Vec<usize> = lines.iter().map(|l| utf16_len(l)).collect();
    let footer_len = |omitted: usize| utf16_len(&quick_index_footer(omitted));
    let text_len =
        |kept_sum: usize, omitted: usize| heading_len + kept_sum + 2 + footer_len(omitted);

    let all_sum: usize = lens.iter().map(|l| 1 + l).sum();
    let kept: Vec<usize> = if text_len(all_sum, 0) <= QUICK_INDEX_MAX_CHARS {
        (0..total).collect()
    } else {
        let mut kept = Vec::new();
        let mut sum = 0usize;
        for (index, len) in lens.iter().enumerate() {
            let candidate = sum + 1 + len;
            let omitted = total - kept.len() - 1;
            if text_len(candidate, omitted) <= QUICK_INDEX_MAX_CHARS {
                kept.push(index);
                sum = candidate;
            }
        }
        // Step 4: drop the last kept line while the final omitted count (which may have more
        // digits than when a line was admitted) makes the text too long. With step 3's
        // arithmetic the last admission already measured the final text, so this only guards.
        while let Some(&last) = kept.last() {
            if text_len(sum, total - kept.len()) <= QUICK_INDEX_MAX_CHARS {
                break;
            }
            kept.pop();
            sum -= 1 + lens[last];
        }
        kept
    };

    let omitted = total - kept.len();
    let mut out = String::with_capacity(QUICK_INDEX_MAX_CHARS);
    out.push_str(QUICK_INDEX_HEADING);
    for index in kept {
        out.push('\n');
        out.push_str(&lines[index]);
    }
    out.push_str("\n\n");
    out.push_str(&quick_index_footer(omitted));
    Some(out)
}
