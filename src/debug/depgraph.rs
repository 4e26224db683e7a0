//! `KFDRT_DEPGRAPH=path.dot`: the submissions and what orders them, as a Graphviz graph.
//! A node per submission (queue, packet indices, what it does); a solid edge from the
//! submission that completes a signal to each later barrier waiting on it, labelled with the
//! signal; a dashed edge between consecutive submissions of one queue (queue order). A barrier
//! waiting on a signal no earlier submission completes gets an edge from a node for the
//! signal itself (set by the host, or missing: the edge a hang report points at).
//!
//! Signals come from a pool and are reused: a dependency is attributed to the most recent
//! submission, before the barrier, whose completion signal it is.

use super::recorder::Submitted;
use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::PathBuf;

/// The graph being recorded.
pub(crate) struct DepGraph {
    path: PathBuf,
    nodes: Vec<String>,
    /// (from, to, label, dashed)
    edges: Vec<(String, String, String, bool)>,
    /// The node that last completes each signal.
    completes: HashMap<u64, String>,
    /// The last node of each queue.
    last_of_queue: HashMap<u32, String>,
    host_signals: Vec<u64>,
}

impl DepGraph {
    pub(crate) fn new(path: PathBuf) -> DepGraph {
        DepGraph {
            path,
            nodes: Vec::new(),
            edges: Vec::new(),
            completes: HashMap::new(),
            last_of_queue: HashMap::new(),
            host_signals: Vec::new(),
        }
    }

    pub(crate) fn submitted(&mut self, s: &Submitted) {
        let id = format!("q{}_{}", s.queue_id, s.first);
        let label = format!(
            "{} queue {} #{}{}\\n{}",
            s.kind,
            s.queue_id,
            s.first,
            if s.last > s.first {
                format!("..{}", s.last)
            } else {
                String::new()
            },
            escape(&s.labels.join(", "))
        );
        self.nodes.push(format!("  {id} [label=\"{label}\"];"));
        if let Some(prev) = self.last_of_queue.insert(s.queue_id, id.clone()) {
            self.edges.push((prev, id.clone(), String::new(), true));
        }
        for &sig in &s.waits_on {
            let from = match self.completes.get(&sig) {
                Some(n) => n.clone(),
                None => {
                    let n = format!("signal_{sig:x}");
                    if !self.host_signals.contains(&sig) {
                        self.host_signals.push(sig);
                        self.nodes.push(format!(
                            "  {n} [shape=ellipse, label=\"signal {sig:#x}\\n(no submission \
                             completes it)\"];"
                        ));
                    }
                    n
                }
            };
            self.edges
                .push((from, id.clone(), format!("signal {sig:#x}"), false));
        }
        if s.completion != 0 {
            self.completes.insert(s.completion, id);
        }
    }

    /// The graph as DOT.
    pub(crate) fn to_dot(&self) -> String {
        let mut out = String::from("digraph kfdrt {\n  node [shape=box];\n");
        for n in &self.nodes {
            out.push_str(n);
            out.push('\n');
        }
        for (from, to, label, dashed) in &self.edges {
            let _ = writeln!(
                out,
                "  {from} -> {to} [label=\"{label}\"{}];",
                if *dashed { ", style=dashed" } else { "" }
            );
        }
        out.push_str("}\n");
        out
    }

    pub(crate) fn write(&self) -> std::io::Result<()> {
        std::fs::write(&self.path, self.to_dot())?;
        log::info!("kfdrt: dependency graph written to {}", self.path.display());
        Ok(())
    }
}

fn escape(s: &str) -> String {
    s.replace('\\', "\\\\").replace('"', "\\\"")
}
