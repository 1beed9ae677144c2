#define _GNU_SOURCE
#include "CSpawn.h"

int cspawn_add_close_from(posix_spawn_file_actions_t *actions, int from) {
    return posix_spawn_file_actions_addclosefrom_np(actions, from);
}
