// Declarations glibc (2.34+) makes only under _GNU_SOURCE, which Swift's Glibc module does not define: posix_spawn
// file actions closing every inherited descriptor above stderr and setting the working directory, and pipe2.
#include <spawn.h>

extern int posix_spawn_file_actions_addclosefrom_np(posix_spawn_file_actions_t *actions, int from);
extern int posix_spawn_file_actions_addchdir_np(posix_spawn_file_actions_t *restrict actions,
                                                const char *restrict path);
extern int pipe2(int fds[2], int flags);
