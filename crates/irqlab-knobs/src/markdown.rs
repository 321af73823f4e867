//! The README's knob tables, generated from [`KNOBS`] and the profiles
//! (`python -m irqlab.knobs --markdown` prints them); a test fails when the
//! README's copy differs.

use crate::profile::Profile;
use crate::table::{Knob, KNOBS};

/// The line before the generated tables in README.md.
pub const BEGIN: &str =
    "<!-- knob tables: generated from crates/irqlab-knobs (python -m irqlab.knobs --markdown); do not edit by hand -->";
/// The line after them.
pub const END: &str = "<!-- end of knob tables -->";

fn range(k: &Knob, r: crate::Range) -> String {
    if k.is_bool() {
        "true or false".into()
    } else {
        format!("{} to {}", r.min, r.max)
    }
}

/// Both tables (the knobs, then each profile's values), without the markers.
pub fn tables() -> String {
    let mut out = String::new();
    out.push_str("| scenario field | kernel / ethtool name | unit | kernel accepts | simulator accepts | default | what it does | source |\n");
    out.push_str("|---|---|---|---|---|---|---|---|\n");
    for k in KNOBS {
        let sim = if k.sim == k.kernel { "the same".to_string() } else { format!("{} (\\*)", range(&k, k.sim)) };
        out.push_str(&format!(
            "| `{}` | `{}` | {} | {} | {} | {} | {} | {} |\n",
            k.path,
            k.kernel_name,
            k.unit.name(),
            range(&k, k.kernel),
            sim,
            k.default,
            k.doc,
            k.source
        ));
    }
    out.push_str("\n(\\*) A scenario accepts less than the kernel:\n\n");
    for k in KNOBS.iter().filter(|k| k.sim_why.is_some()) {
        out.push_str(&format!("- `{}`: {}.\n", k.path, k.sim_why.unwrap_or_default()));
    }
    out.push('\n');
    out.push_str("| knob |");
    for p in Profile::ALL {
        out.push_str(&format!(" `{p}` |"));
    }
    out.push_str("\n|---|");
    out.push_str(&"---|".repeat(Profile::ALL.len()));
    out.push('\n');
    for (i, (k, _)) in Profile::ALL[0].settings().iter().enumerate() {
        out.push_str(&format!("| `{}` |", k.path));
        for p in Profile::ALL {
            out.push_str(&format!(" {} |", p.settings()[i].1));
        }
        out.push('\n');
    }
    out
}

/// The tables between their [`BEGIN`] and [`END`] lines: what README.md holds.
pub fn block() -> String {
    format!("{BEGIN}\n{}{END}\n", tables())
}

/// The text between [`BEGIN`] and [`END`] in `readme` (`None`: no markers).
pub fn readme_tables(readme: &str) -> Option<&str> {
    let start = readme.find(BEGIN)? + BEGIN.len();
    let end = start + readme[start..].find(END)?;
    Some(readme[start..end].trim_matches('\n'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_readme_tables_are_the_generated_ones() {
        let readme = include_str!("../../../README.md");
        let found = readme_tables(readme).expect("README.md has the knob-table markers");
        assert!(
            found == tables().trim_matches('\n'),
            "README.md's knob tables differ from crates/irqlab-knobs: replace them with the output of \
             `python -m irqlab.knobs --markdown`"
        );
    }

    #[test]
    fn every_knob_and_profile_appears_once() {
        let t = tables();
        for k in KNOBS {
            assert_eq!(t.matches(&format!("| `{}` |", k.path)).count(), if matches!(k.part, crate::Part::Itr | crate::Part::Steering) { 1 } else { 2 });
        }
        assert!(t.contains("| `napi.irq_suspend_timeout` | `irq-suspend-timeout` | ns | 0 to 9223372036854775807 | the same |"));
        assert!(t.contains("| `coalesce.rx-usecs` | `rx-usecs` | µs | 0 to 4294967295 | 0 to 4095 (\\*) |"));
        assert!(t.contains("| `napi.irq_suspend_timeout` | 0 | 0 | 0 | 20000000 | 0 | 20000000 |"));
    }

    #[test]
    fn a_readme_without_markers_or_with_other_tables_is_told_apart() {
        assert_eq!(readme_tables("# no tables"), None);
        let stale = format!("x\n{BEGIN}\n| old |\n{END}\n");
        assert_eq!(readme_tables(&stale), Some("| old |"));
        assert_ne!(readme_tables(&stale), Some(tables().trim_matches('\n')));
    }
}
