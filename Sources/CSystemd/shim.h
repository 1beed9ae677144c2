// libsystemd's journal reader and sd_notify/socket activation, for Swift.
#include <systemd/sd-daemon.h>
#include <systemd/sd-journal.h>
