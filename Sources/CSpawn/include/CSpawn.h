// posix_spawn file actions that Glibc declares only with _GNU_SOURCE, which Swift's Glibc module is built
// without.
#ifndef C_SPAWN_H
#define C_SPAWN_H

#include <spawn.h>

/// Adds an action that closes every descriptor numbered `from` or above
/// (`posix_spawn_file_actions_addclosefrom_np`). Returns 0 or an error number.
int cspawn_add_close_from(posix_spawn_file_actions_t *actions, int from);

#endif
