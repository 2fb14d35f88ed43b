//! The keyword index behind `search_tools`.

/// Tools' words, for ranking against a query: a term found in a tool's
/// name (or its server's) weighs 3, in its title 2, in its description 1.
#[derive(Debug, Default)]
pub struct Index {
    docs: Vec<Doc>,
}

#[derive(Debug)]
struct Doc {
    /// Lowercase words of the name, server and tool name (weighted most).
    names: String,
    /// Lowercase title.
    title: String,
    /// Lowercase description.
    description: String,
}

impl Index {
    /// One document per tool: (model-facing name, server, tool name, title,
    /// description).
    pub fn build<'a>(
        tools: impl Iterator<Item = (&'a str, &'a str, &'a str, &'a str, &'a str)>,
    ) -> Self {
        let docs = tools
            .map(|(name, server, tool, title, description)| Doc {
                names: format!("{name} {server} {tool}").to_lowercase(),
                title: title.to_lowercase(),
                description: description.to_lowercase(),
            })
            .collect();
        Index { docs }
    }

    /// Up to `limit` document indexes, best first; ties keep input order.
    pub fn search(&self, query: &str, limit: usize) -> Vec<usize> {
        let terms: Vec<String> = query
            .split(|c: char| !c.is_alphanumeric())
            .filter(|t| !t.is_empty())
            .map(str::to_lowercase)
            .collect();
        let mut scored: Vec<(u32, usize)> = self
            .docs
            .iter()
            .enumerate()
            .filter_map(|(i, d)| {
                let score: u32 = terms
                    .iter()
                    .map(|t| {
                        3 * u32::from(d.names.contains(t.as_str()))
                            + 2 * u32::from(d.title.contains(t.as_str()))
                            + u32::from(d.description.contains(t.as_str()))
                    })
                    .sum();
                (score > 0).then_some((score, i))
            })
            .collect();
        scored.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        scored.into_iter().take(limit).map(|(_, i)| i).collect()
    }
}
