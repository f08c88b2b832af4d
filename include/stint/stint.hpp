#pragma once
// stint: the one header users include.

#include "stint/detail/export_macros.hpp"
#include "stint/config.hpp"
#include "stint/clock.hpp"
#include "stint/site.hpp"
#include "stint/buffer.hpp"
#include "stint/registry.hpp"
#include "stint/scope.hpp"
#include "stint/analysis/event.hpp"
#include "stint/analysis/event_list.hpp"
#include "stint/analysis/event_tree.hpp"
#include "stint/analysis/key_averages.hpp"
#include "stint/analysis/table.hpp"
#include "stint/warning.hpp"
#include "stint/schedule.hpp"
#include "stint/step_tracker.hpp"
#include "stint/profiler.hpp"
