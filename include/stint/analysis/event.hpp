#pragma once
// One finished event, as every analysis and exporter reads it (design §1 step 5).

#include <cstdint>      // std::int64_t, std::uint64_t, std::uint32_t, std::int32_t
#include <limits>       // std::numeric_limits
#include <optional>     // std::optional, std::nullopt
#include <string>       // std::string
#include <string_view>  // std::string_view
#include <vector>       // std::vector

#include "stint/common/arg_type.hpp"
#include "stint/common/device.hpp"
#include "stint/common/event_kind.hpp"
#include "stint/common/source_location.hpp"

namespace stint {

/// Index into an event_list; `no_index` means "none" (no parent, no child, no args).
using event_index = std::uint32_t;
inline constexpr event_index no_index = std::numeric_limits<event_index>::max();

/// What one captured op input was (record_shapes); decides how the trace shows it.
enum class input_kind : std::uint8_t {
    none,         ///< absent (an empty std::optional, an undefined tensor): type "", value ""
    tensor,       ///< dims, strides and dtype name
    tensor_list,  ///< a container of tensors: type "TensorList", nested dims
    scalar,       ///< a number, bool or enum: type "Scalar", dims []
    scalar_list,  ///< a list of numbers: type "ScalarList", value "[64, 32]"
    string,       ///< text: type "String", the text as its value (torch shows no positional strings)
    other,        ///< captured as present but opaque: type "", value ""
};

/// Which tensor a captured input was, for the execution trace's data dependencies (captured while one
/// records). Addresses are compared, never dereferenced; its traits give them (the tensor's data
/// pointer by default).
struct tensor_identity {
    std::uint64_t key = 0;      ///< the tensor: its data pointer, unless its traits named another key
    std::uint64_t storage = 0;  ///< the allocation it views: its data pointer, unless its traits gave the base
    std::int64_t offset = 0;    ///< elements from the storage's start to the tensor's first
    std::uint32_t itemsize = 0; ///< bytes per element; 0: unknown
    stint::device device = {};  ///< where its memory is

    friend bool operator==(const tensor_identity&, const tensor_identity&) noexcept = default;
};

/// The C++ type a captured scalar or scalar list had.
enum class scalar_type : std::uint8_t {
    integer,           ///< signed integers, chars and enums with a signed underlying type
    unsigned_integer,  ///< unsigned integers (stored bit-for-bit in `integers`)
    real,              ///< float, double, long double (kept as double)
    boolean,           ///< bool (0 or 1 in `integers`)
};

/// One captured input.
///
///     const stint::op_input& w = in[1];
///     if (w.kind == stint::input_kind::tensor && w.dims.size() == 4) { ... }
struct op_input {
    input_kind kind = input_kind::none;
    scalar_type values_type = scalar_type::integer;  ///< scalar and scalar_list
    std::string dtype;                  ///< tensor: its dtype name ("float")
    std::vector<std::int64_t> dims;     ///< tensor: its sizes
    std::vector<std::int64_t> strides;  ///< tensor: its strides; empty when the type has none
    std::vector<op_input> tensors;      ///< tensor_list: its tensors (or none entries)
    std::vector<std::int64_t> integers; ///< scalar/scalar_list of integer, unsigned or bool values
    std::vector<double> reals;          ///< scalar/scalar_list of real values
    std::string text;                   ///< string
    bool cut = false;                   ///< dims, list elements or text were cut at a bound
    /// tensor: which tensor it was, when captured for an execution trace (see tensor_identity)
    std::optional<tensor_identity> identity;

    /// The value of an integer (or bool) scalar; nullopt for anything else, or an unsigned value
    /// beyond int64.
    [[nodiscard]] std::optional<std::int64_t> int_value() const {
        if (kind != input_kind::scalar || values_type == scalar_type::real || integers.size() != 1) return std::nullopt;
        if (values_type == scalar_type::unsigned_integer && integers[0] < 0) return std::nullopt;
        return integers[0];
    }
    /// The values of an integer list, or of one integer scalar as a list of one; nullopt otherwise
    /// (a cut list included: its values are incomplete).
    [[nodiscard]] std::optional<std::vector<std::int64_t>> int_list() const {
        if (kind == input_kind::scalar) {
            const auto v = int_value();
            if (!v) return std::nullopt;
            return std::vector<std::int64_t>{*v};
        }
        if (kind != input_kind::scalar_list || cut || values_type == scalar_type::real) return std::nullopt;
        for (std::int64_t v : integers) {
            if (values_type == scalar_type::unsigned_integer && v < 0) return std::nullopt;
        }
        return integers;
    }
};

/// A named argument given to an event by stint::add_args (a framework's "Sequence number").
struct named_arg {
    std::string name;
    arg_type type = arg_type::integer;
    std::int64_t integer = 0;  ///< integer, boolean (0 or 1), unsigned_integer (bit for bit)
    double real = 0;           ///< real
    std::string text;          ///< string

    friend bool operator==(const named_arg&, const named_arg&) = default;
};

/// Captured inputs and framework annotations of one op (filled by capture policies). The vectors
/// that describe inputs have one entry per input, in argument order.
struct event_args {
    std::vector<std::vector<std::int64_t>> input_dims;     ///< "Input Dims" ([] for a non-tensor, as
                                                           ///< torch's key_averages shapes)
    std::vector<std::string> input_types;                  ///< "Input type"
    std::vector<std::vector<std::int64_t>> input_strides;  ///< "Input Strides" ([] when unknown)
    std::vector<std::string> concrete_inputs;              ///< "Concrete Inputs"; empty when concrete
                                                           ///< capture was off
    std::vector<input_kind> input_kinds;                   ///< what each input was
    /// Per input: the dims and strides of each tensor of a TensorList input (empty for the others);
    /// the trace nests them inside "Input Dims" / "Input Strides".
    std::vector<std::vector<std::vector<std::int64_t>>> tensor_list_dims;
    std::vector<std::vector<std::vector<std::int64_t>>> tensor_list_strides;
    std::string module_hierarchy;                          ///< "Module Hierarchy"
    std::string record_args;                               ///< record_function's args string
    bool truncated = false;                                ///< capture hit a bound ("Inputs truncated")
    /// The inputs whole, tensor identities included: kept when an execution trace records (the
    /// fields above are what the Chrome trace and tables show).
    std::vector<op_input> inputs;
    /// What stint::record_outputs gave inside the op ("Output Dims" / "Output type" in the trace).
    std::vector<op_input> outputs;
    /// What stint::add_args gave the event, in the order first given (a name given again keeps its
    /// place and takes the later value).
    std::vector<named_arg> named_args;
    bool named_args_cut = false;  ///< an add_args call had more than its record holds ("Args truncated")

    /// The named argument called `name`, or null.
    [[nodiscard]] const named_arg* find_arg(std::string_view name) const noexcept {
        for (const named_arg& a : named_args) {
            if (a.name == name) return &a;
        }
        return nullptr;
    }
};

/// What a device event (kernel, copy, memset, sync) or a CUDA API call carries besides its times, as
/// CUPTI reported it (cuda_activities); the trace writes these as Kineto's args. Fields that do not
/// apply to the event's kind stay at their defaults.
struct device_args {
    std::uint32_t correlation = 0;  ///< CUPTI's correlation id: an API call and the work it launched share it
    std::uint32_t context = 0;      ///< CUDA context
    // kernels
    std::int32_t grid[3] = {0, 0, 0};
    std::int32_t block[3] = {0, 0, 0};
    std::uint32_t registers_per_thread = 0;
    std::uint32_t static_shared_memory = 0;   ///< bytes per block
    std::uint32_t dynamic_shared_memory = 0;  ///< bytes per block
    std::uint32_t graph_id = 0;               ///< the CUDA graph that launched it; 0: none
    std::uint64_t graph_node_id = 0;
    // copies and memsets
    std::uint64_t bytes = 0;
    std::uint8_t copy_kind = 0;     ///< CUpti_ActivityMemcpyKind (HtoD = 1, DtoH = 2, ...)
    std::uint8_t src_kind = 0;      ///< CUpti_ActivityMemoryKind of the source (memset: of the target)
    std::uint8_t dst_kind = 0;      ///< CUpti_ActivityMemoryKind of the destination
    bool peer = false;              ///< a peer-to-peer copy: src_device and dst_device say which
    std::int32_t src_device = -1;
    std::int32_t dst_device = -1;
    std::uint32_t sync_type = 0;    ///< CUpti_ActivitySynchronizationType of a cuda_sync event
    // API calls
    std::uint32_t cbid = 0;         ///< CUPTI callback id (cudaLaunchKernel_v7000 = 211)
    std::int32_t return_value = 0;
};

/// Kineto's name of a CUpti_ActivitySynchronizationType (its syncTypeString): a sync event's name and
/// its "cuda_sync_kind" arg. The decoder checks these numbers against <cupti.h>.
constexpr std::string_view sync_type_name(std::uint32_t type) noexcept {
    switch (type) {
        case 1: return "Event Sync";
        case 2: return "Stream Wait Event";
        case 3: return "Stream Sync";
        case 4: return "Context Sync";
        default: return "Unknown Sync";
    }
}

/// What a "[memory]" or "[OutOfMemory]" event carries (profile_memory), as Kineto's args.
struct memory_record {
    std::uint64_t addr = 0;            ///< "Addr": the block (0 for an out-of-memory event)
    /// "Bytes": positive for an allocation, negative for a free, the requested size for an OOM.
    std::int64_t bytes = 0;
    /// "Total Allocated" on the event's device just after it: the allocator's figure when it gave one,
    /// else the bytes allocated during the session and still live (never counting blocks from before).
    std::int64_t total_allocated = 0;
    std::int64_t total_reserved = 0;   ///< "Total Reserved": the allocator's, else Total Allocated
    stint::device device = {};         ///< "Device Type", "Device Id"
    /// A free whose allocation the session saw. false: the block was allocated before the session (or
    /// its record was dropped): its size is the allocator's if it gave one, else 0, and totals keep it.
    bool matched = true;
};

/// How a memory event was reported, for the builder's replay (event_list_builder::add_memory_event).
struct memory_event_flags {
    bool free = false;          ///< a free (else an allocation, or an OOM by its kind)
    bool size_known = true;     ///< a free: the allocator gave its size (else it is found from the allocation)
    bool totals_given = false;  ///< the allocator gave Total Allocated and Total Reserved
};

/// Bytes an event allocated minus bytes it freed, by where the memory is (torch's cpu_memory_usage,
/// self_cpu_memory_usage, device_memory_usage, self_device_memory_usage): a memory event's own
/// bytes; an op's from the memory events on its thread while it was open, with (total) or without
/// (self) those under its children.
struct memory_usage {
    std::int64_t cpu = 0;
    std::int64_t self_cpu = 0;
    std::int64_t device = 0;
    std::int64_t self_device = 0;
};

/// The highest live memory of one device during a session, and what was running then.
struct memory_peak {
    stint::device device = {};
    std::int64_t bytes = 0;       ///< the highest Total Allocated of the device's memory events
    std::int64_t at_ns = 0;       ///< when it was reached
    std::string op;               ///< the innermost op or scope open on the allocating thread then ("" if none)
};

/// A flow (STINT_FLOW_BEGIN/END, stint::flow_token): the points where work left one thread and arrived
/// on another, each an event of the list (flow_begin, flow_end) whose parent is the scope it was bound to.
struct flow_link {
    std::uint64_t id = 0;         ///< the id both points carried
    event_index begin = no_index;  ///< the flow_begin point
    event_index end = no_index;    ///< the flow_end point
};

/// An async span (stint::async_scope): its begin and end points, on the threads that made them.
struct async_span {
    std::uint64_t id = 0;
    event_index begin = no_index;  ///< the async_begin point; its name is the span's
    event_index end = no_index;    ///< the async_end point; no_index: the span had not ended at the stop
};

/// Points of flows and async spans that found no partner in the list: nothing is dropped silently, so
/// the trace shows these counts (a flow begun before start() or ended after stop() is one of them).
struct unmatched_points {
    std::uint64_t flow_begins = 0;   ///< a flow begin with no later end of its id
    std::uint64_t flow_ends = 0;     ///< a flow end with no open begin of its id
    std::uint64_t async_open = 0;    ///< an async span still open at the stop (its trace "b" has no "e")
    std::uint64_t async_ends = 0;    ///< an async span end whose begin is not in the list

    [[nodiscard]] std::uint64_t total() const noexcept { return flow_begins + flow_ends + async_open + async_ends; }
    unmatched_points& operator+=(const unmatched_points& o) noexcept {
        flow_begins += o.flow_begins;
        flow_ends += o.flow_ends;
        async_open += o.async_open;
        async_ends += o.async_ends;
        return *this;
    }
};

/// The value of a counter's sample (an event of kind `counter`: STINT_COUNTER, stint::counter), as it
/// was set: an integer, or a floating-point number (`is_real`).
///
///     if (const auto v = list.counter_of(e)) fmt::print("{} = {}\n", e.name, v->as_double());
struct counter_value {
    std::int64_t integer = 0;  ///< the value, unless is_real
    double real = 0;           ///< the value, when is_real
    bool is_real = false;      ///< a floating-point value (or an unsigned one beyond the int64 range)

    /// The value as a double (an integer beyond 2^53 rounded).
    [[nodiscard]] double as_double() const noexcept { return is_real ? real : static_cast<double>(integer); }
    friend bool operator==(const counter_value&, const counter_value&) noexcept = default;
};

/// A finished event. Times are nanoseconds since the session's base time; the `*_us`
/// accessors give microseconds as doubles, the unit torch's FunctionEvent uses.
///
/// An event_list hands events out by value, assembled from its compact storage (48 bytes per event,
/// design §1 step 5): keep an event_index, not a pointer, to refer to one later.
struct event {
    std::string_view name;             ///< static site name or a copy owned by the event_list
    event_index index = no_index;      ///< its place in the event_list it was read from
    std::uint64_t id = 0;              ///< "Record function id": unique, non-negative, per session
    std::uint32_t thread = 0;          ///< index into event_list::threads()
    event_kind kind = event_kind::user_annotation;
    std::uint16_t depth = 0;           ///< nesting depth on its thread, 0 for top level; stays at 65535 deeper
    std::int64_t start_ns = 0;
    std::int64_t end_ns = 0;
    std::int64_t self_ns = 0;          ///< duration minus the durations of direct children; 0 on a device
    event_index parent = no_index;
    event_index first_child = no_index;
    event_index next_sibling = no_index;
    event_index args = no_index;       ///< into event_list::args_table(), when inputs were captured
    event_index stack = no_index;      ///< the stack's node (event_list::stack), when stacks were captured
    std::int64_t flops = -1;           ///< -1: no flop estimate for this event
    /// The site's source location (static data of the instrumented code), or nullptr for names
    /// made at run time (record_function, STINT_SCOPE_NAMED) and hand-built events.
    const source_location* location = nullptr;
    /// Where it ran: the CPU, or for a kernel, copy, memset or sync the device (torch's device_type
    /// and device_index).
    stint::device device = {};
    std::uint32_t stream = 0;           ///< device events: the CUDA stream
    /// Device events and CUDA API calls: the CPU op or scope that launched them (the innermost one
    /// open on the launching thread), found through CUPTI's external correlation; no_index: none.
    event_index linked = no_index;
    /// CPU events: the first device event they launched (event_list::kernels walks the rest).
    event_index first_linked = no_index;
    event_index next_linked = no_index;  ///< the next device event of the same launcher
    event_index device_info = no_index;  ///< into event_list::device_args_of, for device events and API calls
    /// Device time (ns): for a device event its duration; for a CPU event the durations of the device
    /// events it launched, with (device_ns) or without (self_device_ns) those of its descendants.
    std::int64_t device_ns = 0;
    std::int64_t self_device_ns = 0;
    event_index memory_info = no_index;  ///< into event_list::memory_of, for [memory] and [OutOfMemory]

    /// Equal in every field (two reads of one event of one list are equal).
    friend bool operator==(const event&, const event&) noexcept = default;

    [[nodiscard]] std::int64_t duration_ns() const noexcept { return end_ns - start_ns; }
    [[nodiscard]] double start_us() const noexcept { return static_cast<double>(start_ns) / 1e3; }
    [[nodiscard]] double end_us() const noexcept { return static_cast<double>(end_ns) / 1e3; }
    /// torch: FunctionEvent.cpu_time_total (µs); 0 for an event on a device.
    [[nodiscard]] double cpu_time_total() const noexcept {
        return on_device() ? 0.0 : static_cast<double>(duration_ns()) / 1e3;
    }
    /// torch: FunctionEvent.self_cpu_time_total (µs).
    [[nodiscard]] double self_cpu_time_total() const noexcept { return static_cast<double>(self_ns) / 1e3; }
    [[nodiscard]] bool is_top_level() const noexcept { return parent == no_index; }
    /// Whether it ran on a device (a kernel, copy, memset or sync) rather than on a CPU thread.
    [[nodiscard]] bool on_device() const noexcept { return device.type != device_type::cpu; }
    /// torch: FunctionEvent.device_time_total (µs): see device_ns.
    [[nodiscard]] double device_time_total() const noexcept { return static_cast<double>(device_ns) / 1e3; }
    /// torch: FunctionEvent.self_device_time_total (µs): see self_device_ns.
    [[nodiscard]] double self_device_time_total() const noexcept { return static_cast<double>(self_device_ns) / 1e3; }
};

/// A thread that recorded into the session, or a device stream that device events ran on.
struct thread_info {
    std::uint64_t os_tid = 0;    ///< the kernel's thread id (gettid), as Kineto exports it; a device
                                 ///< track's CUDA stream id
    std::string name;            ///< pthread name at registration, or stint::set_thread_name's
    std::uint64_t recorded = 0;  ///< records kept for this thread in the session
    std::uint64_t dropped = 0;   ///< records lost to the buffer budget, counted exactly
    stint::device device = {};   ///< the CPU for a thread; the device of a stream's track

    [[nodiscard]] bool is_device_track() const noexcept { return device.type != device_type::cpu; }
};

/// Properties of a device that device events ran on, as Kineto's top-level "deviceProperties" lists
/// them (known fields only; 0 or "" when CUPTI did not report them).
struct device_properties {
    std::int32_t id = 0;
    std::string name;
    std::uint32_t compute_major = 0;
    std::uint32_t compute_minor = 0;
    std::uint64_t total_global_memory = 0;  ///< bytes
    std::uint32_t multiprocessors = 0;
    std::uint32_t max_threads_per_block = 0;
    std::uint32_t max_threads_per_multiprocessor = 0;
    std::uint32_t max_registers_per_block = 0;
    std::uint32_t max_registers_per_multiprocessor = 0;
    std::uint32_t max_shared_memory_per_block = 0;
    std::uint32_t max_shared_memory_per_multiprocessor = 0;
    std::uint32_t warp_size = 0;
};

/// What the device collector (cuda_activities) lost, each count separate and exported: nothing is
/// dropped silently.
struct device_loss {
    std::uint64_t dropped_records = 0;       ///< records CUPTI could not store (cuptiActivityGetNumDroppedRecords)
    std::uint64_t rejected_buffers = 0;      ///< buffer requests refused over the budget (CUPTI then drops)
    std::uint64_t foreign_buffers = 0;       ///< buffers another CUPTI client's callbacks took (records lost)
    std::uint64_t incomplete_records = 0;    ///< records with no or reversed timestamps (work still running)
    std::uint64_t unknown_records = 0;       ///< records of kinds stint does not decode, syncs on no known device
    std::uint64_t unparsed_bytes = 0;        ///< bytes of a buffer after a record CUPTI could not walk
    std::uint64_t unlinked_records = 0;      ///< device events and API calls with no recorded launching op
    std::uint64_t out_of_window_records = 0; ///< records outside the session's window
    std::uint64_t stale_records = 0;         ///< records of an earlier session delivered late
    std::uint64_t gpu_before_launch = 0;     ///< device events that start before their API call (clock skew)

    [[nodiscard]] std::uint64_t lost() const noexcept {
        return dropped_records + incomplete_records + unknown_records + out_of_window_records + stale_records;
    }
    device_loss& operator+=(const device_loss& o) noexcept {
        dropped_records += o.dropped_records;
        rejected_buffers += o.rejected_buffers;
        foreign_buffers += o.foreign_buffers;
        incomplete_records += o.incomplete_records;
        unknown_records += o.unknown_records;
        unparsed_bytes += o.unparsed_bytes;
        unlinked_records += o.unlinked_records;
        out_of_window_records += o.out_of_window_records;
        stale_records += o.stale_records;
        gpu_before_launch += o.gpu_before_launch;
        return *this;
    }
};

/// The device collection of a session: whether it ran, why not, and what it lost.
struct device_report {
    /// "off" (not asked for: no cuda_activities, or a CPU-only session), "active", "active, shared: <what>"
    /// (collected beside another CUPTI client: what that cost), or "unavailable: <reason>" (the session
    /// recorded the CPU only).
    std::string status = "off";
    std::string library;               ///< the libcupti that was loaded
    std::uint32_t cupti_version = 0;   ///< cuptiGetVersion() of the loaded library
    std::uint32_t cupti_headers = 0;   ///< CUPTI_API_VERSION stint was compiled against
    std::string clock_alignment;       ///< how device times were put on stint's clock
    double clock_error_ns = 0;         ///< that mapping's measured error (0: CUPTI read stint's own clock)
    bool torn_down = false;            ///< CUPTI was detached after the session (cuptiFinalize)
    device_loss loss;
    std::vector<device_properties> devices;

    [[nodiscard]] bool active() const noexcept { return status.starts_with("active"); }
};

}  // namespace stint
