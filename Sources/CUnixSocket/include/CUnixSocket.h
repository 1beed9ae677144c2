// Linux socket calls that Swift cannot make through Glibc alone: `struct ucred` and the CMSG_* macros need
// _GNU_SOURCE and C macros, so they live here behind plain types.
#ifndef C_UNIX_SOCKET_H
#define C_UNIX_SOCKET_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/// The sender of a Unix socket message, as the kernel reports it; the layout of `struct ucred`.
typedef struct {
    int32_t pid;
    uint32_t uid;
    uint32_t gid;
} cunixsocket_credentials;

/// The `level` and `name` to pass to getsockopt for SO_PEERCRED.
extern const int cunixsocket_sol_socket;
extern const int cunixsocket_so_peercred;

/// Enables SCM_CREDENTIALS on a datagram socket. Returns 0, or -1 with errno set.
int cunixsocket_enable_passcred(int fd);

/// Receives one datagram without blocking. Returns its full length (which may exceed `capacity`: the rest was
/// cut), or -1 with errno set. `*has_credentials` is set to 1 when the kernel attached SCM_CREDENTIALS.
ssize_t cunixsocket_receive(int fd, void *buffer, size_t capacity, cunixsocket_credentials *credentials,
                            int *has_credentials);

/// Accepts a connection on a listening socket, its descriptor close-on-exec (accept4, which needs _GNU_SOURCE).
/// Returns the descriptor, or -1 with errno set.
int cunixsocket_accept(int fd);

/// An eventfd for waking a poll(2); -1 with errno set on failure.
int cunixsocket_eventfd(void);

/// Receives one datagram, waiting for it, with the descriptors it carries (SCM_RIGHTS, received close-on-exec):
/// what a service manager's notification socket does. Returns the datagram's length (cut at `capacity`), or -1
/// with errno set; `*count` is the number of descriptors stored in `descriptors`, at most `maximum` (any more
/// are closed).
ssize_t cunixsocket_receive_descriptors(int fd, void *buffer, size_t capacity, int *descriptors, int maximum,
                                        int *count);

#endif
