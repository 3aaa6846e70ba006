//! The circles of one folder's graph (its strongly connected components)
//! and the report that names each with one path round it.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use super::graph::{Graph, Graphs, Node};

/// The strongly connected components of `graph` with more than one
/// module (Tarjan), each sorted.
pub fn tangles(graph: &Graph) -> Vec<Vec<Node>> {
    struct State<'g> {
        graph: &'g Graph,
        index: BTreeMap<&'g Node, usize>,
        low: BTreeMap<&'g Node, usize>,
        stack: Vec<&'g Node>,
        on_stack: BTreeSet<&'g Node>,
        out: Vec<Vec<Node>>,
    }
    fn visit<'g>(s: &mut State<'g>, node: &'g Node) {
        let i = s.index.len();
        s.index.insert(node, i);
        s.low.insert(node, i);
        s.stack.push(node);
        s.on_stack.insert(node);
        for next in s.graph.get(node).into_iter().flat_map(BTreeMap::keys) {
            if !s.index.contains_key(next) {
                visit(s, next);
                let low = s.low[node].min(s.low[next]);
                s.low.insert(node, low);
            } else if s.on_stack.contains(next) {
                let low = s.low[node].min(s.index[next]);
                s.low.insert(node, low);
            }
        }
        if s.low[node] == s.index[node] {
            let mut component = Vec::new();
            while let Some(top) = s.stack.pop() {
                s.on_stack.remove(top);
                component.push(top.clone());
                if top == node {
                    break;
                }
            }
            if component.len() > 1 {
                component.sort();
                s.out.push(component);
            }
        }
    }
    let mut s = State {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        out: Vec::new(),
    };
    for node in graph.keys() {
        if !s.index.contains_key(node) {
            visit(&mut s, node);
        }
    }
    s.out.sort();
    s.out
}

/// One cycle through `start` inside `members` (breadth-first, so the
/// shortest), as the path round it.
pub fn cycle_through(graph: &Graph, members: &[Node], start: &Node) -> Vec<Node> {
    let mut came_from: BTreeMap<Node, Node> = BTreeMap::new();
    let mut queue = VecDeque::from([start.clone()]);
    while let Some(node) = queue.pop_front() {
        for next in graph.get(&node).into_iter().flat_map(BTreeMap::keys) {
            if !members.contains(next) {
                continue;
            }
            if next == start {
                let mut path = vec![start.clone()];
                let mut at = node.clone();
                while at != *start {
                    path.push(at.clone());
                    at = came_from[&at].clone();
                }
                path.push(start.clone());
                path.reverse();
                return path;
            }
            if !came_from.contains_key(next) && next != start {
                came_from.insert(next.clone(), node.clone());
                queue.push_back(next.clone());
            }
        }
    }
    Vec::new()
}

/// Every circle of every folder: a line naming its modules and one path
/// round it, then the import behind each step of that path.
pub fn report(graphs: &Graphs) -> Vec<String> {
    let mut out = Vec::new();
    for (folder, graph) in graphs {
        for members in tangles(graph) {
            let cycle = cycle_through(graph, &members, &members[0]);
            let names =
                |nodes: &[Node]| -> Vec<String> { nodes.iter().map(|n| n.name(folder)).collect() };
            let steps: Vec<String> = cycle
                .windows(2)
                .map(|w| format!("\n    {}", graph[&w[0]][&w[1]]))
                .collect();
            out.push(format!(
                "modules {{{}}} form a circle, e.g. {}{}",
                names(&members).join(", "),
                names(&cycle).join(" → "),
                steps.concat()
            ));
        }
    }
    out
}
