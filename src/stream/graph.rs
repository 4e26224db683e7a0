//! [`Graph`]: a sequence of stream operations captured once ([`Stream::capture`]) and replayed
//! many times ([`Stream::replay`]) as one batch of AQL packets: one doorbell per replay, and per
//! packet only the copy of an encoded packet and its arguments, as a prepared dispatch costs.
//! Unlike raw prepared dispatches it is safe: it owns the kernels' code and the buffers its
//! arguments name, and every replay holds them until it completes. Copies and fills become
//! blit-kernel launches on the stream's queue, so a replay needs no second engine.
//!
//! ```
//! # fn main() -> kfdrt::Result<()> {
//! # let kfd = kfdrt::Kfd::from_env()?;
//! # let gpu = kfd.gpu(0).unwrap();
//! let mut stream = gpu.create_stream()?;
//! let (a, b) = (gpu.alloc(4096, kfdrt::MemoryKind::DeviceLocal)?, gpu.alloc(4096, kfdrt::MemoryKind::DeviceLocal)?);
//! let mut capture = stream.capture();
//! capture.fill(&a, 0, 0x2a2a_2a2a, 4096)?;
//! capture.copy(&b, 0, &a, 0, 4096)?;
//! let graph = capture.finish();
//! drop((a, b)); // the graph keeps both
//! for _ in 0..3 {
//!     stream.replay(&graph)?;
//! }
//! stream.synchronize()?;
//! # Ok(()) }
//! ```

use super::{Stream, StreamEvent, Tail};
use crate::code_object::KernelMetadata;
use crate::error::{Result, StreamError};
use crate::kernel_args::{KernelArgs, LaunchContext, LaunchGeometry};
use crate::launch::{check_kernel, Dispatch, DispatchArgs};
use crate::memory::Buffer;
use crate::queue::held::Held;
use crate::queue::Submission;
use std::sync::Arc;

/// A kernel launch of a graph, encoded: what a replay reads, kept small so that a replay
/// walks little memory.
#[derive(Clone)]
struct Launch {
    /// The dispatch packet: kernarg address 0, no completion signal.
    packet: [u32; 16],
    group_segment: u32,
    private_segment: u32,
    kernarg_size: u32,
    /// Its encoded argument segment: `start..end` of the graph's argument bytes.
    args: (u32, u32),
}

/// What re-encodes a launch's arguments ([`Graph::set_args`]): its shape and its kernel's
/// metadata (`None` for blit kernels, whose arguments the graph owns).
#[derive(Clone)]
struct Rebuild {
    kernel: String,
    with: Option<(LaunchGeometry, Arc<KernelMetadata>)>,
}

#[derive(Clone)]
enum Node {
    Launch(Launch),
    /// A barrier on another stream's event.
    Wait(Arc<Submission>),
}

/// What one node keeps allocated.
#[derive(Clone, Default)]
struct NodeResources {
    /// The kernel's code.
    _code: Option<Arc<dyn Send + Sync>>,
    /// The buffers its arguments name.
    buffers: Held,
}

/// A launch in a [`Graph`], to give new arguments with [`Graph::set_args`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GraphNode(usize);

/// Captured stream operations, replayed with [`Stream::replay`] (see [`crate::stream`]).
pub struct Graph {
    /// The queue whose address the launches' hidden arguments carry.
    queue_id: u32,
    context: LaunchContext,
    nodes: Vec<Node>,
    /// Every launch's argument bytes, one after the other.
    args: Vec<u8>,
    /// Per node, how to give it new arguments (waits have none).
    rebuild: Vec<Option<Rebuild>>,
    /// What each node keeps allocated (its kernel's code and its arguments' buffers). A replay
    /// holds one handle on all of it; [`Graph::set_args`] copies it if a replay still does.
    resources: Arc<Vec<NodeResources>>,
}

impl std::fmt::Debug for Graph {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Graph")
            .field("queue", &self.queue_id)
            .field("nodes", &self.nodes.len())
            .finish()
    }
}

/// A graph being captured from a stream: the operations are recorded, not run.
pub struct Capture<'s> {
    stream: &'s Stream,
    context: LaunchContext,
    nodes: Vec<Node>,
    args: Vec<u8>,
    rebuild: Vec<Option<Rebuild>>,
    resources: Vec<NodeResources>,
}

impl Stream {
    /// Starts capturing a [`Graph`] to replay on this stream.
    pub fn capture(&self) -> Capture<'_> {
        Capture {
            stream: self,
            context: LaunchContext::for_queue(&self.queue),
            nodes: Vec::new(),
            args: Vec::new(),
            rebuild: Vec::new(),
            resources: Vec::new(),
        }
    }

    /// Runs `graph` (captured from this stream) after the work enqueued before it, as one
    /// submission.
    pub fn replay(&mut self, graph: &Graph) -> Result<()> {
        if graph.queue_id != self.queue.id() {
            return Err(StreamError::OtherStream {
                captured_on: graph.queue_id,
                replayed_on: self.queue.id(),
            }
            .into());
        }
        if graph.nodes.is_empty() {
            return Ok(());
        }
        let deps = self.deps(true);
        let mut b = self.queue.batch()?;
        if !deps.is_empty() {
            b.barrier_and(&deps)?;
        }
        b.staged.held.push(graph.resources.clone());
        for node in &graph.nodes {
            match node {
                Node::Launch(l) => b.stage_held_elsewhere(
                    &l.packet,
                    l.group_segment,
                    l.private_segment,
                    l.kernarg_size,
                    graph
                        .args
                        .get(l.args.0 as usize..l.args.1 as usize)
                        .unwrap_or(&[]),
                ),
                Node::Wait(e) => {
                    b.barrier_and(&[e.signal()])?;
                }
            }
        }
        let done = b.submit()?;
        self.push(Tail::Kernel(done));
        Ok(())
    }
}

impl Capture<'_> {
    fn push(&mut self, node: Node, rebuild: Option<Rebuild>, held: NodeResources) -> GraphNode {
        self.nodes.push(node);
        self.rebuild.push(rebuild);
        self.resources.push(held);
        GraphNode(self.nodes.len() - 1)
    }

    /// A launch of `d` (prepared as `p`) with `args` as its argument bytes.
    fn launch_node(
        &mut self,
        p: &crate::PreparedDispatch<'_>,
        d: &Dispatch<'_>,
        args: &[u8],
    ) -> Node {
        let start = self.args.len() as u32;
        self.args.extend_from_slice(args);
        Node::Launch(Launch {
            packet: p.packet,
            group_segment: p.group_segment,
            private_segment: d.kernel().private_segment_size(),
            kernarg_size: d.kernel().kernarg_size(),
            args: (start, self.args.len() as u32),
        })
    }

    /// Records a launch. Its arguments must be metadata-checked ([`Dispatch::with_args`]) or
    /// none: raw bytes carry addresses the graph could not keep alive for later replays.
    pub fn launch(&mut self, d: &Dispatch<'_>) -> Result<GraphNode> {
        d.check_gpu(self.stream.gpu.id())?;
        let p = d.prepare()?;
        let mut held = NodeResources {
            _code: d.kernel().code().cloned(),
            buffers: Held::default(),
        };
        let (args, rebuild) = match d.args {
            DispatchArgs::None => (d.no_args()?.to_vec(), None),
            DispatchArgs::Raw(_) => {
                return Err(StreamError::RawGraphArguments {
                    kernel: d.kernel().name().to_owned(),
                }
                .into())
            }
            DispatchArgs::Built(a) => {
                check_kernel(d.kernel(), a, &self.stream.gpu, false)?;
                let geometry = LaunchGeometry::of(d);
                held.buffers = a.held().clone();
                (
                    a.encode(&geometry, &self.context)?,
                    Some((geometry, a.metadata_arc().clone())),
                )
            }
        };
        let node = self.launch_node(&p, d, &args);
        let rebuild = Rebuild {
            kernel: d.kernel().name().to_owned(),
            with: rebuild,
        };
        Ok(self.push(node, Some(rebuild), held))
    }

    /// Records blit-kernel launches, which hold `buffers`.
    fn blits(
        &mut self,
        launches: Vec<crate::copy::BlitLaunch<'_>>,
        buffers: &[&Buffer],
    ) -> Result<()> {
        for l in launches {
            let d = l.dispatch();
            let p = d.prepare()?;
            let mut held = NodeResources {
                _code: d.kernel().code().cloned(),
                buffers: Held::default(),
            };
            for b in buffers {
                held.buffers.push(b.retain());
            }
            let node = self.launch_node(&p, &d, &l.args);
            let rebuild = Rebuild {
                kernel: d.kernel().name().to_owned(),
                with: None,
            };
            self.push(node, Some(rebuild), held);
        }
        Ok(())
    }

    /// Records a copy of `bytes` from `src[src_off..]` to `dst[dst_off..]` (as blit kernels).
    pub fn copy(
        &mut self,
        dst: &Buffer,
        dst_off: u64,
        src: &Buffer,
        src_off: u64,
        bytes: u64,
    ) -> Result<()> {
        let launches = self
            .stream
            .copies
            .copy_launches(dst, dst_off, src, src_off, bytes)?;
        self.blits(launches, &[dst, src])
    }

    /// Records a fill of `bytes` (a multiple of 4) of `dst[dst_off..]` with `pattern`.
    pub fn fill(&mut self, dst: &Buffer, dst_off: u64, pattern: u32, bytes: u64) -> Result<()> {
        let launches = self
            .stream
            .copies
            .fill_launches(dst, dst_off, pattern, bytes)?;
        self.blits(launches, &[dst])
    }

    /// Records a wait for `event` (of another stream): every replay waits for it.
    pub fn wait_event(&mut self, event: &StreamEvent) -> Result<()> {
        event.check_device(&self.stream.gpu)?;
        self.push(
            Node::Wait(event.marker().clone()),
            None,
            NodeResources::default(),
        );
        Ok(())
    }

    /// The graph captured.
    pub fn finish(self) -> Graph {
        Graph {
            queue_id: self.stream.queue.id(),
            context: self.context,
            nodes: self.nodes,
            args: self.args,
            rebuild: self.rebuild,
            resources: Arc::new(self.resources),
        }
    }
}

impl Graph {
    /// How many operations (launches, blit launches, waits) it holds.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// Gives the launch `node` new arguments for later replays (replays already submitted keep
    /// theirs). They must be built for the same kernel.
    pub fn set_args(&mut self, node: GraphNode, args: &KernelArgs) -> Result<()> {
        let (Some(Node::Launch(launch)), Some(Some(rebuild))) =
            (self.nodes.get_mut(node.0), self.rebuild.get(node.0))
        else {
            return Err(StreamError::NotALaunch { node: node.0 }.into());
        };
        let Some((geometry, metadata)) = &rebuild.with else {
            return Err(StreamError::UncheckedArguments {
                node: node.0,
                kernel: rebuild.kernel.to_string(),
            }
            .into());
        };
        if !Arc::ptr_eq(metadata, args.metadata_arc()) && **metadata != *args.metadata() {
            return Err(crate::kernel_args::KernelArgError::OtherKernel {
                built_for: args.metadata().name.clone(),
                kernel: rebuild.kernel.clone(),
            }
            .into());
        }
        let bytes = args.encode(geometry, &self.context)?;
        let (start, end) = (launch.args.0 as usize, launch.args.1 as usize);
        if bytes.len() == end - start {
            self.args[start..end].copy_from_slice(&bytes);
        } else {
            // Not the same layout after all (metadata equal but encoded differently): put
            // them at the end.
            let start = self.args.len();
            self.args.extend_from_slice(&bytes);
            launch.args = (start as u32, self.args.len() as u32);
        }
        let resources = Arc::make_mut(&mut self.resources);
        let held = resources
            .get_mut(node.0)
            .expect("every node of a graph has its resources, launches found above included");
        // The old arguments' buffers go (a running replay keeps its own copy of the list).
        held.buffers = args.held().clone();
        Ok(())
    }
}
