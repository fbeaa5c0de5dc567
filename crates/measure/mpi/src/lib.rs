//! The MPI transport of the lgate-plogp harness, over rsmpi and the system's MPI library.
//!
//! ```no_run
//! use lgate_transport::Transport;
//!
//! let mpi = lgate_mpi::MpiTransport::init().expect("MPI starts once per process");
//! println!("rank {} of {} on {}", mpi.rank(), mpi.size(), mpi.processor_name());
//! ```
#![deny(missing_docs)]

mod doorbell;
mod remote_bells;
mod tools;

pub use doorbell::Doorbells;
pub use tools::{
    is_protocol_setting, protocol_environment, read_control_variables, ControlValue,
    ControlVariables, PROTOCOL_ENVIRONMENT, PROTOCOL_PATTERNS,
};

use lgate_rundir::{MpiSettings, SettingValue, YieldSetting};
use lgate_topology::Rank;
use lgate_transport::{PoliteWait, Tag, Transport, TransportError};
/// rsmpi, for programs that run MPI themselves and hand a communicator to
/// [`MpiTransport::from_communicator`].
pub use mpi;
use mpi::collective::{CommunicatorCollectives, Root};
use mpi::datatype::Equivalence;
use mpi::point_to_point::{Destination, Source};
use mpi::topology::{Communicator, SimpleCommunicator};
use mpi::Threading;

/// An error of starting MPI.
#[derive(Debug, thiserror::Error)]
pub enum MpiError {
    /// MPI was started before in this process.
    #[error("MPI is already initialised in this process")]
    AlreadyInitialised,
}

/// A communicator as a [`Transport`]: `MPI_COMM_WORLD` initialised for the life of this value
/// (finalised when it is dropped), or a communicator of a program that runs MPI itself.
pub struct MpiTransport {
    // Dropped last: finalises MPI (when this value started it).
    _universe: Option<mpi::environment::Universe>,
    world: SimpleCommunicator,
    rank: Rank,
    size: usize,
    idle_yield: Option<IdleYield>,
    doorbells: Option<Doorbells>,
    /// Open MPI's switch of `mpi_yield_when_idle` at run time, when lgate-plogp owns it.
    yield_switch: Option<YieldSwitch>,
    /// Whether the library's waits yield now (see [`Transport::yields_while_waiting`]).
    yielding: std::cell::Cell<bool>,
    /// Sends started by [`Transport::send_detached`] and not yet seen complete; each owns its
    /// buffer, given back when the send completes.
    detached: std::cell::RefCell<Vec<mpi::request::Request<'static, [u8]>>>,
}

/// `opal_progress_set_yield_when_idle` of the Open MPI library this process runs with.
type YieldSwitch = unsafe extern "C" fn(bool);

/// Open MPI's run-time switch of yielding when idle, looked up in the loaded library (absent
/// in other MPI libraries).
fn open_mpi_yield_switch() -> Option<YieldSwitch> {
    let name = c"opal_progress_set_yield_when_idle";
    // SAFETY: dlsym with RTLD_DEFAULT searches the loaded libraries for a name; the result is
    // only used when found.
    let symbol = unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) };
    if symbol.is_null() {
        return None;
    }
    // SAFETY: Open MPI 4 and 5 declare it `void opal_progress_set_yield_when_idle(bool)`.
    Some(unsafe { std::mem::transmute::<*mut libc::c_void, YieldSwitch>(symbol) })
}

extern "C" {
    /// From `src/constants.c`: the implementation and version of the `mpi.h` compiled against.
    fn lgate_mpi_built_with() -> *const std::ffi::c_char;
}

/// The MPI implementation and version this program was compiled against, as its header says
/// (`Open MPI 4.1.4`, `MPICH 4.0.2`); the library loaded at run time is
/// [`Transport::library_version`].
pub fn built_with() -> String {
    // SAFETY: returns a pointer to a NUL-terminated string literal.
    unsafe { std::ffi::CStr::from_ptr(lgate_mpi_built_with()) }
        .to_string_lossy()
        .into_owned()
}

/// The MPICH control variable of how many polls a blocking wait makes before it yields.
pub const MPICH_POLLS_BEFORE_YIELD: &str = "MPIR_CVAR_POLLS_BEFORE_YIELD";

/// MPICH's counterpart of what Open MPI's mpirun does when ranks outnumber a host's cores:
/// yield at every poll of a blocking wait (`MPIR_CVAR_POLLS_BEFORE_YIELD=1`) unless the user
/// chose. Hydra says how many ranks share the host (`MPI_LOCALNRANKS`). Only MPICH's ch3 device
/// (MVAPICH2, ch3:nemesis builds) reads the variable; ch4 lists it but has no such setting.
/// Call it before MPI starts and before any other thread does.
fn mpich_yields_when_oversubscribed() {
    if std::env::var_os(MPICH_POLLS_BEFORE_YIELD).is_some() {
        return;
    }
    let local: Option<usize> = std::env::var("MPI_LOCALNRANKS")
        .ok()
        .and_then(|v| v.trim().parse().ok());
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    if local.is_some_and(|n| n > cpus) {
        // Single-threaded here: nothing else reads the environment while it changes.
        std::env::set_var(MPICH_POLLS_BEFORE_YIELD, "1");
    }
}

/// Open MPI's `mpi_yield_when_idle` as this process started MPI with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdleYield {
    /// The value in force (`0` or `1`, or whatever the user gave).
    pub value: String,
    /// Who chose it: `lgate-plogp` or `environment` (the user or the launcher).
    pub set_by: &'static str,
}

/// The environment variable that sets Open MPI's `mpi_yield_when_idle`.
pub const IDLE_YIELD_VARIABLE: &str = "OMPI_MCA_mpi_yield_when_idle";

impl MpiTransport {
    /// Initialises MPI (single-threaded) with the library's own settings and takes the world
    /// communicator: for programs in which every rank is busy at once (broadcasts).
    pub fn init() -> Result<Self, MpiError> {
        mpich_yields_when_oversubscribed();
        Self::start(None)
    }

    /// Initialises MPI for pair tests, in which most ranks wait while one pair (or a few) is
    /// measured: Open MPI's `mpi_yield_when_idle` is turned off unless the environment sets it.
    /// mpirun turns it on when ranks outnumber cores, and then every MPI call of the pair being
    /// measured hands its core to any other runnable rank (measured on 8 ranks over 2 cores:
    /// pair tests 2-10x slower and noisier). Waiting ranks do not need it: they sleep in
    /// [`PoliteWait`], outside MPI. Two ranks bound to the same CPU do: the harness turns it
    /// on for their tests ([`Transport::yield_when_idle`]). It is turned off once MPI has
    /// started, with Open MPI's run-time switch, and on again before MPI_Finalize: MPI's own
    /// start-up and finalize wait in collectives of every rank, which without yielding spin
    /// on the cores the others need (256 ranks on 2 cores: MPI_Init took 61-68 s against a whole
    /// hello world's 39 s). Without the switch, the variable is set to 0 before MPI starts.
    /// Call this before any other thread starts.
    pub fn init_for_pair_tests() -> Result<Self, MpiError> {
        let from_environment = std::env::var(IDLE_YIELD_VARIABLE).ok();
        let switch = open_mpi_yield_switch();
        if from_environment.is_none() && switch.is_none() {
            // Single-threaded here: nothing else reads the environment while it changes.
            std::env::set_var(IDLE_YIELD_VARIABLE, "0");
        }
        let idle_yield = match from_environment {
            Some(value) => IdleYield {
                value,
                set_by: "environment",
            },
            None => IdleYield {
                value: "0".into(),
                set_by: "lgate-plogp",
            },
        };
        let transport = Self::start(Some(idle_yield))?;
        // Off for the pair tests, now that MPI has started (yielding through its start-up).
        if transport.yield_switch.is_some() {
            transport.yield_when_idle(false);
        }
        Ok(transport)
    }

    fn start(idle_yield: Option<IdleYield>) -> Result<Self, MpiError> {
        // Funneled: only this thread calls MPI; the wake-up listener (`remote_bells`) never does.
        let (universe, _) = mpi::initialize_with_threading(Threading::Funneled)
            .ok_or(MpiError::AlreadyInitialised)?;
        let world = universe.world();
        let (rank, size) = (world.rank() as Rank, world.size() as usize);
        let is_open_mpi = mpi::environment::library_version()
            .map(|v| v.contains("Open MPI"))
            .unwrap_or(false);
        let doorbells = Doorbells::open(&world);
        // Open MPI yields when its variable says so; other libraries are taken to yield (MPICH
        // does after a number of polls).
        let yielding = match &idle_yield {
            Some(y) if is_open_mpi => y.value.trim() == "1" || y.value.trim() == "true",
            _ => true,
        };
        Ok(MpiTransport {
            _universe: Some(universe),
            world,
            rank,
            size,
            yielding: std::cell::Cell::new(yielding),
            detached: std::cell::RefCell::new(Vec::new()),
            yield_switch: idle_yield
                .as_ref()
                .filter(|y| is_open_mpi && y.set_by == "lgate-plogp")
                .and_then(|_| open_mpi_yield_switch()),
            idle_yield: idle_yield.filter(|_| is_open_mpi),
            doorbells,
        })
    }

    /// Yielding on again for MPI_Finalize, which waits for every rank, when it was turned off.
    fn yield_for_finalize(&mut self) {
        if self._universe.is_some() && !self.yielding.get() {
            self.yield_when_idle(true);
        }
    }

    /// Uses a communicator of a program that started MPI itself (and finalises it), for
    /// example a duplicate of its world, so that these messages never mix with its own.
    pub fn from_communicator(comm: SimpleCommunicator) -> Self {
        let (rank, size) = (comm.rank() as Rank, comm.size() as usize);
        MpiTransport {
            _universe: None,
            world: comm,
            rank,
            size,
            idle_yield: None,
            doorbells: None,
            yield_switch: None,
            yielding: std::cell::Cell::new(true),
            detached: std::cell::RefCell::new(Vec::new()),
        }
    }

    /// Stops every process of the job (MPI_Abort) with exit status `code`.
    pub fn abort(&self, code: i32) -> ! {
        self.world.abort(code)
    }

    fn peer(&self, rank: Rank) -> Result<mpi::topology::Process<'_>, TransportError> {
        if rank >= self.size {
            return Err(TransportError::NoSuchRank {
                peer: rank,
                size: self.size,
            });
        }
        Ok(self.world.process_at_rank(rank as i32))
    }
}

impl Drop for MpiTransport {
    fn drop(&mut self) {
        // Before the fields, and so before the universe finalises MPI.
        self.yield_for_finalize();
        // A run that failed may leave sends nobody will take: left to MPI, not waited for
        // (an incomplete request panics when dropped).
        for request in self.detached.get_mut().drain(..) {
            std::mem::forget(request);
        }
    }
}

impl Transport for MpiTransport {
    fn rank(&self) -> Rank {
        self.rank
    }

    fn size(&self) -> usize {
        self.size
    }

    fn send(&self, to: Rank, tag: Tag, data: &[u8]) -> Result<(), TransportError> {
        self.peer(to)?.send_with_tag(data, tag.0);
        Ok(())
    }

    fn ssend(&self, to: Rank, tag: Tag, data: &[u8]) -> Result<(), TransportError> {
        self.peer(to)?.synchronous_send_with_tag(data, tag.0);
        Ok(())
    }

    fn send_polite(&self, to: Rank, tag: Tag, data: &[u8]) -> Result<(), TransportError> {
        let peer = self.peer(to)?;
        let held_up = mpi::request::scope(|scope| {
            let mut request = peer.immediate_send_with_tag(scope, data, tag.0);
            // Wake the receiver now: the message is on its way ahead of the wake-up, or (above
            // the eager limit) its envelope, and such a send completes only once the receiver
            // has started receiving it.
            self.notify(to);
            let mut wait = PoliteWait::new(None);
            let mut held_up = false;
            loop {
                match request.test() {
                    Ok(_) => return held_up,
                    Err(pending) => request = pending,
                }
                held_up = true;
                wait.nap();
            }
        });
        // A send that did not complete at once (a first message that waited for its
        // connection, a long one) may have reached the receiver only after its wake-up: wake
        // it again. One that did (most: short ones) is not rung twice, which would only wake
        // the receiver again in its next wait.
        if held_up {
            self.notify(to);
        }
        Ok(())
    }

    fn send_detached(&self, to: Rank, tag: Tag, data: Vec<u8>) -> Result<(), TransportError> {
        let peer = self.peer(to)?;
        // Given back in `detached_sent` once the send no longer reads it.
        let buffer: &'static [u8] = Box::leak(data.into_boxed_slice());
        let request = peer.immediate_send_with_tag(mpi::request::StaticScope, buffer, tag.0);
        self.notify(to);
        self.detached.borrow_mut().push(request);
        self.detached_sent().map(|_| ())
    }

    fn detached_sent(&self) -> Result<bool, TransportError> {
        let mut pending = self.detached.borrow_mut();
        let mut left = Vec::with_capacity(pending.len());
        for request in pending.drain(..) {
            match request.test_with_data() {
                Ok((_, buffer)) => {
                    // SAFETY: `buffer` was leaked from a Box in `send_detached` and this
                    // request, now complete and consumed, was its only reader.
                    drop(unsafe { Box::from_raw(std::ptr::from_ref(buffer).cast_mut()) });
                }
                Err(request) => left.push(request),
            }
        }
        *pending = left;
        Ok(pending.is_empty())
    }

    fn recv(&self, from: Rank, tag: Tag, buf: &mut [u8]) -> Result<usize, TransportError> {
        // No probe first: this runs inside timed code. A message longer than `buf` is an MPI
        // error (MPI_ERR_TRUNCATE), which stops the job with MPI's own message.
        let status = self.peer(from)?.receive_into_with_tag(buf, tag.0);
        Ok(status.count(u8::equivalent_datatype()) as usize)
    }

    fn probe(&self, from: Rank, tag: Tag) -> Result<Option<usize>, TransportError> {
        Ok(self
            .peer(from)?
            .immediate_probe_with_tag(tag.0)
            .map(|s| s.count(u8::equivalent_datatype()) as usize))
    }

    fn probe_any(&self, tag: Tag) -> Result<Option<(Rank, usize)>, TransportError> {
        Ok(self
            .world
            .any_process()
            .immediate_probe_with_tag(tag.0)
            .map(|s| {
                (
                    s.source_rank() as Rank,
                    s.count(u8::equivalent_datatype()) as usize,
                )
            }))
    }

    fn send_all(&self, tag: Tag, messages: &[(Rank, &[u8])]) -> Result<(), TransportError> {
        let peers = messages
            .iter()
            .map(|&(to, _)| self.peer(to))
            .collect::<Result<Vec<_>, _>>()?;
        mpi::request::scope(|scope| {
            let requests: Vec<_> = peers
                .iter()
                .zip(messages)
                .map(|(peer, &(_, data))| peer.immediate_send_with_tag(scope, data, tag.0))
                .collect();
            for request in requests {
                request.wait();
            }
        });
        Ok(())
    }

    fn send_recv(
        &self,
        tag: Tag,
        to: Rank,
        data: &[u8],
        from: Rank,
        buf: &mut [u8],
    ) -> Result<usize, TransportError> {
        let (to, from) = (self.peer(to)?, self.peer(from)?);
        let status =
            mpi::point_to_point::send_receive_into_with_tags(data, &to, tag.0, buf, &from, tag.0);
        Ok(status.count(u8::equivalent_datatype()) as usize)
    }

    fn library_broadcast(&self, buf: &mut [u8], root: Rank) -> Result<bool, TransportError> {
        let root = self.peer(root)?;
        // Nothing to send (MPI_Bcast returns at once for a count of 0; rsmpi's empty slice is
        // refused as an argument).
        if !buf.is_empty() {
            root.broadcast_into(buf);
        }
        Ok(true)
    }

    fn library_barrier(&self) -> Result<bool, TransportError> {
        self.world.barrier();
        Ok(true)
    }

    fn processor_name(&self) -> String {
        mpi::environment::processor_name().unwrap_or_else(|_| "unknown".into())
    }

    fn library_settings(&self) -> Option<MpiSettings> {
        let mut settings = MpiSettings::default();
        if let Some(cvars) = read_control_variables() {
            settings.protocol = Some(
                cvars
                    .protocol
                    .into_iter()
                    .map(|(name, value)| (name, setting_value(value)))
                    .collect(),
            );
            settings.selected = Some(PROTOCOL_PATTERNS.iter().map(|p| p.to_string()).collect());
            settings.total = Some(cvars.total);
        }
        settings.environment = protocol_environment();
        settings.mpi_yield_when_idle = self.idle_yield.as_ref().map(|y| YieldSetting {
            on_for_pairs_bound_to_one_cpu: self.yield_switch.is_some(),
            set_by: y.set_by.to_string(),
            value: y.value.clone(),
        });
        (!settings.is_empty()).then_some(settings)
    }

    fn yield_when_idle(&self, on: bool) {
        if let Some(switch) = self.yield_switch {
            // SAFETY: the library's own setter of a flag its progress loop reads; called
            // between pair tests, from the one thread that makes MPI calls.
            unsafe { switch(on) }
            self.yielding.set(on);
        }
    }

    fn yields_while_waiting(&self) -> bool {
        self.yielding.get()
    }

    fn notifies(&self, from: Rank) -> bool {
        self.doorbells.as_ref().is_some_and(|d| d.wakes_me(from))
    }

    fn notified_by_all(&self) -> bool {
        self.doorbells.as_ref().is_some_and(|d| d.whole_job())
    }

    fn may_trail_its_ring(&self, from: Rank) -> bool {
        self.doorbells
            .as_ref()
            .is_none_or(|d| d.may_trail_its_ring(from))
    }

    fn not_woken_by(&self, from: Rank) {
        if let Some(d) = &self.doorbells {
            d.missed(from);
        }
    }

    fn notify(&self, to: Rank) {
        if let Some(d) = &self.doorbells {
            d.ring(to);
        }
    }

    fn sleep(&self, duration: std::time::Duration) -> bool {
        match &self.doorbells {
            Some(d) => d.sleep(duration),
            None => {
                std::thread::sleep(duration);
                false
            }
        }
    }

    fn library_version(&self) -> String {
        mpi::environment::library_version()
            .map(|v| {
                v.trim_matches(|c: char| c == '\0' || c.is_whitespace())
                    .to_string()
            })
            .unwrap_or_else(|_| "unknown".into())
    }
}

/// A control variable's value as JSON (integers beyond i64 as text).
fn setting_value(value: ControlValue) -> SettingValue {
    match value {
        ControlValue::Integer(i) => i64::try_from(i)
            .map_or_else(|_| SettingValue::Text(i.to_string()), SettingValue::Integer),
        ControlValue::Float(f) => SettingValue::Float(f),
        ControlValue::Text(t) => SettingValue::Text(t),
    }
}
