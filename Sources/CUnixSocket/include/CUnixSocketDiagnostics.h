// What the kernel knows about a Unix stream connection that Swift cannot ask through Glibc: sock_diag's netlink
// messages are C structures and macros.
#ifndef C_UNIX_SOCKET_DIAGNOSTICS_H
#define C_UNIX_SOCKET_DIAGNOSTICS_H

/// Whether the server has taken the connection on `fd`, a connected Unix stream socket, from its listener's queue
/// with accept(2). Returns 1 when it has, 0 when the connection still waits in the queue, and -1 when the kernel
/// cannot tell (no sock_diag support), with errno set.
int cunixsocket_peer_accepted(int fd);

#endif
