#define _GNU_SOURCE
#include "CUnixSocket.h"

#include <string.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include <sys/socket.h>

_Static_assert(sizeof(cunixsocket_credentials) == sizeof(struct ucred), "ucred layout");

const int cunixsocket_sol_socket = SOL_SOCKET;
const int cunixsocket_so_peercred = SO_PEERCRED;

int cunixsocket_enable_passcred(int fd) {
    int enable = 1;
    return setsockopt(fd, SOL_SOCKET, SO_PASSCRED, &enable, sizeof(enable));
}

ssize_t cunixsocket_receive(int fd, void *buffer, size_t capacity, cunixsocket_credentials *credentials,
                            int *has_credentials) {
    union {
        char bytes[CMSG_SPACE(sizeof(struct ucred))];
        struct cmsghdr align;
    } control;
    struct iovec vector = {.iov_base = buffer, .iov_len = capacity};
    struct msghdr message = {
        .msg_iov = &vector,
        .msg_iovlen = 1,
        .msg_control = control.bytes,
        .msg_controllen = sizeof(control.bytes),
    };
    *has_credentials = 0;
    ssize_t length = recvmsg(fd, &message, MSG_DONTWAIT | MSG_TRUNC | MSG_CMSG_CLOEXEC);
    if (length < 0) {
        return length;
    }
    for (struct cmsghdr *header = CMSG_FIRSTHDR(&message); header != NULL; header = CMSG_NXTHDR(&message, header)) {
        if (header->cmsg_level == SOL_SOCKET && header->cmsg_type == SCM_CREDENTIALS &&
            header->cmsg_len >= CMSG_LEN(sizeof(struct ucred))) {
            memcpy(credentials, CMSG_DATA(header), sizeof(struct ucred));
            *has_credentials = 1;
        }
    }
    return length;
}

int cunixsocket_accept(int fd) {
    return accept4(fd, NULL, NULL, SOCK_CLOEXEC);
}

int cunixsocket_eventfd(void) {
    return eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
}

ssize_t cunixsocket_receive_descriptors(int fd, void *buffer, size_t capacity, int *descriptors, int maximum,
                                        int *count) {
    // systemd accepts up to 768 descriptors in one notification (SCM_MAX_FD is 253 per message).
    union {
        char bytes[CMSG_SPACE(sizeof(int) * 253)];
        struct cmsghdr align;
    } control;
    struct iovec vector = {.iov_base = buffer, .iov_len = capacity};
    struct msghdr message = {
        .msg_iov = &vector,
        .msg_iovlen = 1,
        .msg_control = control.bytes,
        .msg_controllen = sizeof(control.bytes),
    };
    *count = 0;
    ssize_t length = recvmsg(fd, &message, MSG_CMSG_CLOEXEC);
    if (length < 0) {
        return length;
    }
    for (struct cmsghdr *header = CMSG_FIRSTHDR(&message); header != NULL; header = CMSG_NXTHDR(&message, header)) {
        if (header->cmsg_level != SOL_SOCKET || header->cmsg_type != SCM_RIGHTS) {
            continue;
        }
        size_t received = (header->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        int *data = (int *)CMSG_DATA(header);
        for (size_t index = 0; index < received; index++) {
            if (*count < maximum) {
                descriptors[(*count)++] = data[index];
            } else {
                close(data[index]);
            }
        }
    }
    return length;
}
