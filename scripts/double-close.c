// Finds descriptors closed twice, which close whatever another part of the process opened under the number since.
//
// Preloaded, close(N) does not free N: it puts a copy of /dev/null there (close-on-exec), so the number is not
// taken by the next socket; a second close of N is reported with its stack in /tmp/double-close/PID.log, beside
// PID.maps to symbolize it with (llvm-symbolizer --obj=BINARY ADDRESS-minus-its-mapping's-base). The latest
// 6 000 closed numbers are held so; older ones are freed. Only the process whose executable's path contains
// $DOUBLE_CLOSE_ONLY is watched, when it is set (its children close as usual).
//
//   gcc -shared -fPIC -O1 -o /tmp/double-close.so scripts/double-close.c -ldl -lpthread
//   mkdir -p /tmp/double-close
//   DOUBLE_CLOSE_ONLY=logshipdPackageTests.xctest LD_PRELOAD=/tmp/double-close.so swift test --skip-build
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <execinfo.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define LIMIT (1 << 20)
#define HELD 6000

static _Atomic unsigned char held[LIMIT];
static int ring[HELD];
static int ringHead, ringCount;
static pthread_mutex_t ringLock = PTHREAD_MUTEX_INITIALIZER;
static int (*realClose)(int);
static _Atomic int placeholder = -1;
static int disabled;

static void copyMaps(void) {
  static _Atomic int copied;
  if (atomic_exchange(&copied, 1)) return;
  char path[128];
  snprintf(path, sizeof path, "/tmp/double-close/%d.maps", getpid());
  int in = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
  int out = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  char buffer[4096];
  ssize_t count;
  while (in >= 0 && out >= 0 && (count = read(in, buffer, sizeof buffer)) > 0) write(out, buffer, count);
  if (in >= 0) realClose(in);
  if (out >= 0) realClose(out);
}

static void report(int fd) {
  copyMaps();
  char path[128];
  snprintf(path, sizeof path, "/tmp/double-close/%d.log", getpid());
  int out = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (out < 0) return;
  char line[128];
  int length = snprintf(line, sizeof line, "=== double close(%d) tid %ld\n", fd, (long)syscall(SYS_gettid));
  write(out, line, length);
  void *frames[64];
  int count = backtrace(frames, 64);
  for (int i = 0; i < count; i++) {
    length = snprintf(line, sizeof line, "%p\n", frames[i]);
    write(out, line, length);
  }
  realClose(out);
}

int close(int fd) {
  if (!realClose) realClose = dlsym(RTLD_NEXT, "close");
  if (disabled || fd < 0 || fd >= LIMIT) return realClose(fd);
  if (atomic_load(&held[fd])) {
    report(fd);
    errno = EBADF;
    return -1;
  }
  if (atomic_load(&placeholder) < 0) {
    int made = open("/dev/null", O_RDONLY | O_CLOEXEC);
    int expected = -1;
    if (!atomic_compare_exchange_strong(&placeholder, &expected, made)) realClose(made);
  }
  int copy = atomic_load(&placeholder);
  if (fd == copy || fcntl(fd, F_GETFD) < 0) return realClose(fd);  // not open: the real EBADF
  atomic_store(&held[fd], 1);
  if (dup3(copy, fd, O_CLOEXEC) < 0) {
    atomic_store(&held[fd], 0);
    return realClose(fd);
  }
  int freed = -1;
  pthread_mutex_lock(&ringLock);
  if (ringCount == HELD) {
    freed = ring[ringHead];
    ring[ringHead] = fd;
    ringHead = (ringHead + 1) % HELD;
  } else {
    ring[(ringHead + ringCount++) % HELD] = fd;
  }
  if (freed >= 0) atomic_store(&held[freed], 0);
  pthread_mutex_unlock(&ringLock);
  if (freed >= 0) realClose(freed);
  return 0;
}

__attribute__((constructor)) static void watchOnlyChosenProcess(void) {
  const char *only = getenv("DOUBLE_CLOSE_ONLY");
  if (!only) return;
  char executable[512];
  ssize_t length = readlink("/proc/self/exe", executable, sizeof executable - 1);
  executable[length > 0 ? length : 0] = 0;
  disabled = strstr(executable, only) == NULL;
}
