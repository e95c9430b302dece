/*
 * The packet delay line of the link harness (scripts/links/delay.ts runs it; docs/decisions.md
 * D96 says why).
 *
 *   delay-line DEV DELAY_US MAX_HELD_BYTES
 *
 * creates the TUN device DEV (it lives as long as this process) and writes every IP packet the
 * kernel routes into it back into it DELAY_US microseconds later, in the order read. The harness
 * routes a router namespace's forwarded traffic through DEV, so each packet crossing that router
 * waits DELAY_US: TCP on the hosts sees the round trip itself. These kernels have no netem, and
 * opening a TUN device takes an ioctl that Node cannot make; C because the line must keep up with
 * 200 Mbit/s on a machine whose cores are busy with the processes it measures.
 *
 * The device takes TCP segmentation offload (D129): a host's TSO burst (up to 64 KiB, one
 * sender's segments sent back to back) crosses the router as one packet, read and written back
 * whole with its virtio_net_hdr, instead of being cut into segments before the line. Per segment,
 * the router's forwarding and the line kept over a quarter of the machine's two cores busy at
 * 200 Mbit/s, beside the processes the harness measures. A kernel that refuses the offload gets
 * segments.
 *
 * Memory is bounded: packets wait in one ring of MAX_HELD_BYTES; a packet that does not fit is
 * dropped, as by a full router queue. Prints "ready DEV" once the device exists ("ready DEV
 * segments" without the offload); on SIGTERM or SIGINT prints "held-max B dropped P cpu-s S" and
 * exits 0.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

/* An IP packet of up to 64 KiB (a TSO burst too) behind its virtio_net_hdr. */
#define MAX_PACKET (65536 + 64)

/* One held packet in the ring: when it is due, its length, then its bytes (padded to 8). */
struct record {
  int64_t due_ns;
  uint32_t len; /* 0: the rest of the ring up to its end is unused (wrap to 0) */
  uint32_t pad;
};

static volatile sig_atomic_t stopping = 0;
static void on_signal(int sig) {
  (void)sig;
  stopping = 1;
}

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static size_t padded(size_t n) { return (sizeof(struct record) + n + 7) & ~(size_t)7; }

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: delay-line DEV DELAY_US MAX_HELD_BYTES\n");
    return 2;
  }
  const char *dev = argv[1];
  int64_t delay_ns = strtoll(argv[2], NULL, 10) * 1000;
  size_t cap = (size_t)strtoull(argv[3], NULL, 10);
  if (strlen(dev) >= IFNAMSIZ || delay_ns < 0 || cap < 2 * padded(MAX_PACKET)) {
    fprintf(stderr, "DEV must be < %d bytes, DELAY_US >= 0, MAX_HELD_BYTES >= %zu\n", IFNAMSIZ,
            2 * padded(MAX_PACKET));
    return 2;
  }
  cap &= ~(size_t)7;
  int fd = open("/dev/net/tun", O_RDWR | O_NONBLOCK);
  if (fd < 0) {
    perror("open /dev/net/tun");
    return 1;
  }
  struct ifreq ifr;
  memset(&ifr, 0, sizeof ifr);
  ifr.ifr_flags = IFF_TUN | IFF_NO_PI | IFF_VNET_HDR;
  strncpy(ifr.ifr_name, dev, IFNAMSIZ - 1);
  if (ioctl(fd, TUNSETIFF, &ifr) < 0) {
    perror("TUNSETIFF");
    return 1;
  }
  /* Each packet keeps its virtio_net_hdr (zeros without the offload): written back as read. */
  int offload = ioctl(fd, TUNSETOFFLOAD, TUN_F_CSUM | TUN_F_TSO4 | TUN_F_TSO6) == 0;
  if (!offload) perror("TUNSETOFFLOAD (each segment crosses the line alone)");
  unsigned char *ring = malloc(cap);
  unsigned char *pkt = malloc(MAX_PACKET);
  if (!ring || !pkt) {
    perror("malloc");
    return 1;
  }
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGINT, &sa, NULL);
  printf(offload ? "ready %s\n" : "ready %s segments\n", dev);
  fflush(stdout);

  /* The ring holds records from head to tail; used counts bytes taken, wrap gaps included. */
  size_t head = 0, tail = 0, used = 0, held_max = 0;
  unsigned long long dropped = 0;
  struct pollfd pfd = {.fd = fd, .events = POLLIN};
  while (!stopping) {
    struct timespec wait, *waitp = NULL;
    if (used > 0) {
      int64_t left = ((struct record *)(ring + head))->due_ns - now_ns();
      if (left < 0) left = 0;
      wait.tv_sec = left / 1000000000;
      wait.tv_nsec = left % 1000000000;
      waitp = &wait;
    }
    if (ppoll(&pfd, 1, waitp, NULL) < 0 && errno != EINTR) {
      perror("ppoll");
      return 1;
    }
    for (;;) {
      ssize_t n = read(fd, pkt, MAX_PACKET);
      if (n <= 0) break;
      /* Stamped after the read: however long this process waited for a core, no packet leaves
         sooner than DELAY_US after it was read. */
      int64_t due = now_ns() + delay_ns;
      size_t need = padded((size_t)n);
      if (cap - tail < need) {
        /* Not enough room before the ring's end: mark the rest unused, go on at 0. */
        if (used + (cap - tail) + need > cap) {
          dropped++;
          continue;
        }
        if (cap - tail >= sizeof(struct record)) ((struct record *)(ring + tail))->len = 0;
        used += cap - tail;
        tail = 0;
      }
      if (used + need > cap) {
        dropped++;
        continue;
      }
      struct record *r = (struct record *)(ring + tail);
      r->due_ns = due;
      r->len = (uint32_t)n;
      memcpy(ring + tail + sizeof *r, pkt, (size_t)n);
      tail = (tail + need) % cap;
      used += need;
      if (used > held_max) held_max = used;
    }
    int64_t now = now_ns();
    while (used > 0) {
      if (cap - head < sizeof(struct record) || ((struct record *)(ring + head))->len == 0) {
        used -= cap - head;
        head = 0;
        continue;
      }
      struct record *r = (struct record *)(ring + head);
      if (r->due_ns > now) break;
      if (write(fd, ring + head + sizeof *r, r->len) < 0) dropped++;
      size_t take = padded(r->len);
      head = (head + take) % cap;
      used -= take;
    }
  }
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  double cpu = ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
               (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
  printf("held-max %zu dropped %llu cpu-s %.2f\n", held_max, dropped, cpu);
  fflush(stdout);
  return 0;
}
