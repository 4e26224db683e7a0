//! Skip lists per device family, as AMD's `kfdtest.exclude` keeps per ASIC: lines of
//! `family: pattern  # reason`, where the family is a gfx target (`gfx90a`), `emu` (kfd-emu),
//! `hw` (a real GPU) or `all`, and the pattern a test name, or a prefix ending in `*`.

/// One rule of a skip list.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rule {
    pub family: String,
    pub pattern: String,
    pub reason: String,
}

/// Parses a skip list; errors name the line.
pub fn parse(text: &str) -> Result<Vec<Rule>, String> {
    let mut rules = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let (body, reason) = match line.split_once('#') {
            Some((b, r)) => (b.trim(), r.trim()),
            None => (line.trim(), ""),
        };
        if body.is_empty() {
            continue;
        }
        let (family, pattern) = body
            .split_once(':')
            .filter(|(f, p)| !f.trim().is_empty() && !p.trim().is_empty())
            .ok_or_else(|| format!("line {}: expected `family: pattern  # reason`", n + 1))?;
        rules.push(Rule {
            family: family.trim().to_owned(),
            pattern: pattern.trim().to_owned(),
            reason: if reason.is_empty() {
                "excluded".into()
            } else {
                reason.to_owned()
            },
        });
    }
    Ok(rules)
}

/// The rule excluding `test` on a device of `families`, if one does.
pub fn excluded<'a>(rules: &'a [Rule], families: &[&str], test: &str) -> Option<&'a Rule> {
    rules.iter().find(|r| {
        let family = r.family == "all" || families.contains(&r.family.as_str());
        let name = match r.pattern.strip_suffix('*') {
            Some(prefix) => test.starts_with(prefix),
            None => test == r.pattern,
        };
        family && name
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_match_by_family_and_pattern() {
        let rules = parse(
            "# a comment\n\
             gfx1100: wave_exceptions::*  # no gfx11 trap handler build\n\
             all: stress::long\n\
             hw: debugging::a_watch*\n",
        )
        .unwrap();
        assert_eq!(rules.len(), 3);
        let on = |families: &[&str], t: &str| excluded(&rules, families, t).map(|r| &r.reason);
        assert_eq!(
            on(&["gfx1100", "emu"], "wave_exceptions::abort").map(String::as_str),
            Some("no gfx11 trap handler build")
        );
        assert_eq!(on(&["gfx90a", "emu"], "wave_exceptions::abort"), None);
        assert!(on(&["gfx90a", "emu"], "stress::long").is_some());
        assert_eq!(on(&["gfx90a", "emu"], "stress::longer"), None);
        assert!(on(&["gfx90a", "hw"], "debugging::a_watch_reports").is_some());
        assert!(parse("no colon here").is_err());
        assert!(parse("gfx90a:   # nothing").is_err());
    }
}
