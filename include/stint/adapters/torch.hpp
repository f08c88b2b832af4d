#pragma once
// stint::torch_observer: libtorch's operator observer (at::RecordFunction callbacks) bridged into stint
// through stint's public API only: every RecordFunction on every thread becomes an event named at run
// time (stint::begin_event), aten ops and autograd nodes of kind cpu_op, libtorch's user scopes
// user_annotation, with its inputs from c10::IValue (record_shapes), its flops (with_flops) and its
// "Sequence number" and "Fwd thread id" (event_token::add_args). The callback is installed only while a stint
// session records (stint::recording_hook), so an idle observer costs libtorch nothing.
//
//     #include <stint/stint.hpp>
//     #include <stint/adapters/torch.hpp>
//     stint::torch_observer<stint::config<stint::record_shapes>> observe;  // for as long as it lives
//     stint::profiler<stint::config<stint::record_shapes>> prof;            // then profile as usual

#if !defined(NDEBUG)
#error "stint/adapters/torch.hpp needs NDEBUG, as libtorch itself does: libtorch 1.13's at::RecordFunction has a member that exists only without NDEBUG (inputs_valid_, in ATen/record_function.h), so a file built without NDEBUG against a release libtorch (every packaged build) sees a RecordFunction of another layout than the library's, and its inline accessors (inputs(), seqNr()) read the wrong fields: a debug build of your code against a release libtorch cannot work, with or without stint. Fix: 1. build with -DNDEBUG (meson's buildtype=release or b_ndebug=true, CMake's Release), as libtorch was; or 2. leave the adapter out of debug builds."
#endif

#include <atomic>       // std::atomic, std::memory_order
#include <cstddef>      // std::size_t, std::ptrdiff_t
#include <cstdint>      // std::int16_t, std::int64_t
#include <memory>       // std::unique_ptr, std::make_unique
#include <stdexcept>    // std::logic_error
#include <string_view>  // std::string_view
#include <utility>      // std::move

#include <ATen/core/ivalue.h>      // c10::IValue, c10::List, at::Tensor
#include <ATen/record_function.h>  // at::RecordFunction, at::addGlobalCallback, at::ObserverContext

#include "stint/annotate.hpp"

/// An at::Tensor as torch's profiler shows it: its dtype's name ("float", "long int"), sizes and
/// strides (strided tensors only), and where its elements are for the execution trace. An undefined
/// tensor is an absent input.
template <>
struct stint::input_traits<at::Tensor> {
    static void capture(stint::input_writer& w, const at::Tensor& t) {
        if (!t.defined()) {
            w.none();
            return;
        }
        const c10::string_view dtype_name = t.dtype().name();
        const std::string_view dtype(dtype_name.data(), dtype_name.size());
        const bool strided = t.layout() == c10::kStrided;
        if (!w.identities() || !t.has_storage()) {
            if (strided) {
                w.tensor(dtype, t.sizes(), t.strides());
            } else {
                w.tensor(dtype, t.sizes());
            }
            return;
        }
        const c10::Device on = t.device();
        const stint::tensor_address address{
            .data = t.data_ptr(),
            .itemsize = static_cast<std::size_t>(t.element_size()),
            .device = {on.is_cuda() ? stint::device_type::cuda : stint::device_type::cpu,
                       static_cast<std::int16_t>(on.has_index() ? on.index() : 0)},
            .storage = t.storage().data(),
            .key = t.unsafeGetTensorImpl(),
        };
        if (strided) {
            w.tensor(dtype, t.sizes(), t.strides(), address);
        } else {
            w.tensor(dtype, t.sizes(), address);
        }
    }
};

namespace stint::detail {

/// A c10::List<T> as a range of T (its own iterators yield references into its storage's IValues).
template <class T>
class torch_list_view {
public:
    explicit torch_list_view(c10::List<T> list) : list_(std::move(list)) {}
    class iterator {
    public:
        using value_type = T;
        using difference_type = std::ptrdiff_t;
        iterator() = default;
        iterator(const c10::List<T>* list, std::size_t at) : list_(list), at_(at) {}
        T operator*() const { return list_->get(at_); }
        iterator& operator++() {
            ++at_;
            return *this;
        }
        iterator operator++(int) {
            iterator was = *this;
            ++at_;
            return was;
        }
        bool operator==(const iterator& other) const { return at_ == other.at_; }

    private:
        const c10::List<T>* list_ = nullptr;
        std::size_t at_ = 0;
    };
    [[nodiscard]] iterator begin() const { return {&list_, 0}; }
    [[nodiscard]] iterator end() const { return {&list_, list_.size()}; }

private:
    c10::List<T> list_;  // shares the IValue's list: no copy of its elements
};

}  // namespace stint::detail

/// A c10::IValue as torch's profiler shows an op's input: tensors, numbers ("Scalar"), lists of numbers
/// ("ScalarList"), tensor lists ("TensorList"), strings, None; anything else is present but opaque.
template <>
struct stint::input_traits<c10::IValue> {
    static void capture(stint::input_writer& w, const c10::IValue& v) {
        if (v.isTensor()) {
            w.value(v.toTensor());
        } else if (v.isNone()) {
            w.none();
        } else if (v.isBool()) {
            w.scalar(v.toBool());
        } else if (v.isInt()) {
            w.scalar(v.toInt());
        } else if (v.isDouble()) {
            w.scalar(v.toDouble());
        } else if (v.isIntList()) {
            w.scalar_list(stint::detail::torch_list_view<std::int64_t>(v.toIntList()));
        } else if (v.isDoubleList()) {
            w.scalar_list(stint::detail::torch_list_view<double>(v.toDoubleList()));
        } else if (v.isBoolList()) {
            w.scalar_list(stint::detail::torch_list_view<bool>(v.toBoolList()));
        } else if (v.isTensorList()) {
            w.tensor_list(stint::detail::torch_list_view<at::Tensor>(v.toTensorList()));
        } else if (v.isString()) {
            w.string(v.toStringRef());
        } else {
            w.other();
        }
    }
};

namespace stint {

namespace detail {

/// What libtorch hands back to the end callback: the op's event.
struct torch_op_context final : at::ObserverContext {
    event_token event;
};

/// The autograd engine's scope around one node ("autograd::engine::evaluate_function: MmBackward0"),
/// begun last on this thread, until the next RecordFunction begins or it ends: the node that begins
/// right after it gives it its sequence number (libtorch 1.13's Kineto API does the same when it
/// collects its events).
inline constexpr std::string_view evaluate_prefix = "autograd::engine::evaluate_function: ";
inline thread_local torch_op_context* pending_evaluate = nullptr;

/// One observer in the process at a time: two would record every op twice.
inline std::atomic<bool> torch_observer_exists{false};

}  // namespace detail

/// Records libtorch's RecordFunctions into stint's sessions for as long as it lives (one per process).
/// `Config`'s policies decide what is captured, as for STINT_OP: record_shapes takes each op's inputs
/// (libtorch then hands them to the callback), with_flops estimates the flops of the ops stint has
/// formulas for (aten::mm, aten::addmm, aten::conv2d, ...). Its callback is installed only while a
/// stint session records, on every thread libtorch runs ops on.
template <class Config = config<>>
class torch_observer {
public:
    /// Throws std::logic_error when another torch_observer exists.
    torch_observer() {
        if (detail::torch_observer_exists.exchange(true)) {
            throw std::logic_error("stint: torch_observer: one exists already (two would record every op twice)");
        }
        try {
            hook_ = std::make_unique<recording_hook>(&on_recording, this);
        } catch (...) {
            detail::torch_observer_exists.store(false);
            throw;
        }
    }
    torch_observer(const torch_observer&) = delete;
    torch_observer& operator=(const torch_observer&) = delete;
    ~torch_observer() {
        hook_.reset();  // no call of on_recording after this
        remove();
        detail::torch_observer_exists.store(false);
    }

    /// Whether its callback is in libtorch's list now (a session records).
    [[nodiscard]] bool installed() const noexcept { return installed_.load(std::memory_order_acquire); }

private:
    static void on_recording(bool recording, void* self) {
        auto& observer = *static_cast<torch_observer*>(self);
        if (recording) {
            observer.install();
        } else {
            observer.remove();
        }
    }

    void install() {
        if (installed()) return;
        at::RecordFunctionCallback callback(&on_start, &on_end);
        callback.needsInputs(detail::captures_inputs<Config>);
        handle_ = at::addGlobalCallback(callback);
        installed_.store(true, std::memory_order_release);
    }

    void remove() noexcept {
        if (!installed()) return;
        at::removeCallback(handle_);
        installed_.store(false, std::memory_order_release);
    }

    // Never throws into libtorch: an op whose event cannot be begun (no memory) is not recorded.
    static std::unique_ptr<at::ObserverContext> on_start(const at::RecordFunction& fn) noexcept try {
        const event_kind kind =
            fn.scope() == at::RecordScope::USER_SCOPE ? event_kind::user_annotation : event_kind::cpu_op;
        // An op's name lives in its schema, an autograd node's or a scope's in the RecordFunction itself:
        // names are interned by their text, so each is copied once per process whichever it is.
        const std::string_view name(fn.name());
        auto context = std::make_unique<detail::torch_op_context>();
        if constexpr (detail::captures_inputs<Config>) {
            context->event = begin_event<Config>(kind, name, [&fn](input_writer& w) {
                for (const c10::IValue& input : fn.inputs()) w.value(input);
            });
        } else {
            context->event = begin_event<Config>(kind, name, [](input_writer&) {});
        }
        // torch links a backward op to its forward op by these two (its traces carry them when set).
        if (fn.seqNr() >= 0) {
            context->event.add_args({{"Sequence number", fn.seqNr()}, {"Fwd thread id", fn.forwardThreadId()}});
            // As libtorch's Kineto API does: the engine's "autograd::engine::evaluate_function: X" scope
            // takes the two from the autograd node X that begins right after it on its thread.
            if (detail::pending_evaluate != nullptr && fn.scope() == at::RecordScope::BACKWARD_FUNCTION) {
                detail::pending_evaluate->event.add_args(
                    {{"Sequence number", fn.seqNr()}, {"Fwd thread id", fn.forwardThreadId()}});
            }
        }
        const bool evaluate = fn.scope() == at::RecordScope::FUNCTION && name.starts_with(detail::evaluate_prefix);
        detail::pending_evaluate = evaluate ? context.get() : nullptr;
        return context;
    } catch (...) {
        return nullptr;
    }

    static void on_end(const at::RecordFunction&, at::ObserverContext* context) {
        if (context == nullptr) return;
        if (context == detail::pending_evaluate) detail::pending_evaluate = nullptr;
        static_cast<detail::torch_op_context*>(context)->event.end();
    }

    std::atomic<bool> installed_{false};
    at::CallbackHandle handle_ = 0;
    std::unique_ptr<recording_hook> hook_;
};

}  // namespace stint
