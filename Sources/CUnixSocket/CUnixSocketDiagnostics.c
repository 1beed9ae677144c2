#include "CUnixSocketDiagnostics.h"

#include <errno.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <linux/unix_diag.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

// A connection the server has not accepted is held by a socket without an inode of its own (accept(2) gives it
// one), so sock_diag reports this socket's peer as inode 0 until then.
int cunixsocket_peer_accepted(int fd) {
    struct stat status;
    if (fstat(fd, &status) != 0) return -1;
    int diag = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
    if (diag < 0) return -1;
    struct {
        struct nlmsghdr header;
        struct unix_diag_req request;
    } query = {
        .header = {.nlmsg_len = sizeof(query), .nlmsg_type = SOCK_DIAG_BY_FAMILY, .nlmsg_flags = NLM_F_REQUEST},
        .request = {
            .sdiag_family = AF_UNIX,
            .udiag_states = ~0U,
            .udiag_ino = (unsigned int)status.st_ino,
            .udiag_show = UDIAG_SHOW_PEER,
            .udiag_cookie = {~0U, ~0U},
        },
    };
    if (send(diag, &query, sizeof(query), 0) < 0) {
        int saved = errno;
        close(diag);
        errno = saved;
        return -1;
    }
    union {
        char bytes[8192];
        struct nlmsghdr align;
    } answer;
    ssize_t length = recv(diag, answer.bytes, sizeof(answer.bytes), 0);
    int saved = errno;
    close(diag);
    errno = saved;
    if (length < 0) return -1;
    for (struct nlmsghdr *message = &answer.align; NLMSG_OK(message, (size_t)length);
         message = NLMSG_NEXT(message, length)) {
        if (message->nlmsg_type == NLMSG_ERROR) {
            struct nlmsgerr *error = NLMSG_DATA(message);
            errno = error->error < 0 ? -error->error : EPROTO;
            return -1;
        }
        if (message->nlmsg_type != SOCK_DIAG_BY_FAMILY) continue;
        struct unix_diag_msg *found = NLMSG_DATA(message);
        if (found->udiag_ino != (unsigned int)status.st_ino) continue;
        int left = (int)(message->nlmsg_len - NLMSG_LENGTH(sizeof(*found)));
        for (struct nlattr *attribute = (struct nlattr *)(found + 1); left >= (int)sizeof(*attribute);) {
            if (attribute->nla_len < sizeof(*attribute) || attribute->nla_len > left) break;
            if (attribute->nla_type == UNIX_DIAG_PEER && attribute->nla_len >= NLA_HDRLEN + sizeof(unsigned int)) {
                unsigned int peer;
                memcpy(&peer, (char *)attribute + NLA_HDRLEN, sizeof(peer));
                return peer != 0;
            }
            int step = NLA_ALIGN(attribute->nla_len);
            left -= step;
            attribute = (struct nlattr *)((char *)attribute + step);
        }
    }
    errno = ENOENT;
    return -1;
}
