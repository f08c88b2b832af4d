#pragma once
// The execution trace (ET): PyTorch's operator graph, as torch.profiler.ExecutionTraceObserver writes
// it ("schema": "1.1.1-chakra.0.0.4") and PARAM and Chakra read it (design §4). Each op and annotation
// is a node whose ctrl_deps names its parent; inputs and outputs carry tensor ids shared by every node
// that saw the same tensor, so that a reader can rebuild who consumed what another produced. Nodes are
// streamed to a temporary file span by span and the file lands under its name when finished.

#include <cstddef>        // std::size_t
#include <cstdint>        // std::uint64_t, std::int64_t
#include <optional>       // std::optional
#include <string>         // std::string
#include <string_view>    // std::string_view
#include <unordered_map>  // std::unordered_map
#include <vector>         // std::vector

#include "stint/analysis/event_list.hpp"
#include "stint/detail/separate_compilation.hpp"
#include "stint/export/json_writer.hpp"
#include "stint/export/output_file.hpp"

namespace stint::detail {

inline constexpr std::string_view et_schema = "1.1.1-chakra.0.0.4";
inline constexpr std::string_view et_process_node = "[pytorch|profiler|execution_trace|process]";
inline constexpr std::string_view et_thread_node = "[pytorch|profiler|execution_trace|thread]";
inline constexpr std::uint64_t et_root_id = 1;          // 0 means "no id"; ops, tensors and storages start at 2
inline constexpr std::size_t et_max_list = 4096;        // torch's cap on the elements of one list value
inline constexpr std::uint64_t et_scope_function = 0;   // torch's RecordScope::FUNCTION: an operator
inline constexpr std::uint64_t et_scope_user = 7;       // RecordScope::USER_SCOPE: an annotation

/// Whether events of this kind are ET nodes: the ops and annotations, the events a Chrome trace
/// writes as cpu_op and user_annotation (so rf_ids join the two files both ways).
constexpr bool is_execution_trace_node(event_kind kind) noexcept {
    return kind == event_kind::cpu_op || kind == event_kind::user_annotation || kind == event_kind::module;
}

/// Writes one execution trace: the header at construction (so an unwritable path fails then, not at
/// the end of a long run), the nodes of each recorded span with append(), the root node and the end
/// with finish(). Ids (nodes, tensors, storages, one counter) and thread nodes hold across spans.
class execution_trace_writer {
public:
    STINT_DECL explicit execution_trace_writer(const std::string& path);

    execution_trace_writer(const execution_trace_writer&) = delete;
    execution_trace_writer& operator=(const execution_trace_writer&) = delete;

    /// Appends a node for every op and annotation of `events` (one recorded span), parents first.
    STINT_DECL void append(const event_list& events);

    /// Writes the root node and the end, and renames the file into place. Throws std::system_error
    /// when the file cannot be completed (nothing is left under its name then).
    STINT_DECL void finish();

    /// Nodes written so far (the root, thread nodes and op nodes).
    [[nodiscard]] std::uint64_t nodes() const noexcept { return nodes_; }

private:
    // A write that throws leaves the file unusable: later calls do nothing, and the temporary is
    // removed with the writer.
    template <class Write>
    void guarded(Write&& write) {
        try {
            write();
        } catch (...) {
            failed_ = true;
            throw;
        }
    }

    STINT_DECL static std::int64_t steady_milliseconds();

    // torch's "time": the local wall-clock time of the first write, "%Y-%m-%d %X".
    STINT_DECL static std::string local_time_text();

    STINT_DECL std::uint64_t thread_node(std::uint64_t tid);

    // The root or a thread node, less its closing brace: no values, rf_id 0, torch's USER_SCOPE.
    STINT_DECL void write_bare_node(std::string_view name, std::uint64_t id, std::uint64_t parent, std::uint64_t tid);

    STINT_DECL void write_node_start(std::string_view name, std::uint64_t id, std::uint64_t parent);

    // torch's nine attrs, in its order and types. seq_id and fw_tid are the "Sequence number" and "Fwd
    // thread id" a framework gave the op (stint::add_args), else -1 and 0 as torch writes for
    // record_function; stint has no forward parent or operator schema (fw_parent 0, op_schema "");
    // kernel_backend and kernel_file name Triton kernels, which stint does not launch.
    STINT_DECL void write_attrs(std::uint64_t rf_id, std::int64_t seq_id, std::uint64_t scope, std::uint64_t tid,
                                std::uint64_t fw_tid = 0);

    // A named argument's integer value, when the event has one of that name.
    STINT_DECL static std::optional<std::int64_t> integer_arg(const event_args* args, std::string_view name);

    STINT_DECL void write_op_node(const event& e, std::uint64_t id, std::uint64_t parent, std::uint64_t tid,
                                  const event_args* args);

    // {"values": [...], "shapes": [...], "types": [...], "strides": [...]}, one entry per value.
    STINT_DECL void write_values(const std::vector<op_input>& values);

    STINT_DECL static std::size_t list_size(const op_input& v) noexcept;

    STINT_DECL void write_int_list(const std::vector<std::int64_t>& values);

    // A tensor's dims or strides; a list's per element; [] for the others.
    STINT_DECL void write_shape(const op_input& v, bool strides);

    // torch's type text (IValue tag names): "Tensor(float)", "Int", "Double", "Bool", "String", "None",
    // "GenericList[Tensor(float),Int]"; inside a list the element types go unquoted.
    STINT_DECL void write_type(const op_input& v);

    STINT_DECL static std::string_view scalar_type_name(scalar_type type) noexcept;

    STINT_DECL void write_scalar(const op_input& v, std::size_t i);

    // A value: a tensor as torch's [tensor id, storage id, offset, element count, item size, device].
    STINT_DECL void write_value(const op_input& v);

    STINT_DECL void write_tensor(const op_input& v);

    STINT_DECL std::uint64_t id_of(std::unordered_map<std::uint64_t, std::uint64_t>& ids, std::uint64_t key);

    output_file file_;
    json_writer out_;
    bool failed_ = false;
    std::uint64_t next_id_ = et_root_id + 1;
    std::unordered_map<std::uint64_t, std::uint64_t> thread_nodes_;  // OS thread id -> its node's id
    std::unordered_map<std::uint64_t, std::uint64_t> tensor_ids_;    // identity key -> tensor id
    std::unordered_map<std::uint64_t, std::uint64_t> storage_ids_;   // storage address -> storage id
    std::uint64_t nodes_ = 0;
    std::uint64_t spans_ = 0;
    std::uint64_t recorded_ = 0;
    std::uint64_t dropped_ = 0;
    std::uint64_t late_ = 0;
};

}  // namespace stint::detail

#if defined(STINT_HEADER_ONLY)
#include "stint/export/impl/execution_trace.ipp"
#endif
