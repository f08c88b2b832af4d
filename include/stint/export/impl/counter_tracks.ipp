#pragma once
// The bodies of counter_tracks.hpp: the names of the memory counter tracks.

#include "stint/export/counter_tracks.hpp"

namespace stint::detail {

const counter_samples::memory_names& counter_samples::names_of(stint::device where) {
    for (const memory_names& n : memory_names_) {
        if (n.where == where) return n;
    }
    std::string device(device_type_name(where.type));
    if (where.type != device_type::cpu) device += ":" + std::to_string(where.index);
    memory_names_.push_back({where, "Total Allocated (" + device + ")", "Total Reserved (" + device + ")"});
    return memory_names_.back();
}

}  // namespace stint::detail
