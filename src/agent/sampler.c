/* sampler.c: loads sampler.bpf.c, opens the perf events, drains the ring buffer (sampler.h).
 * The drain callback runs for every sample, so it does no allocation: the caller's callback
 * gets a pointer straight into the ring buffer. */
#include "agent/sampler.h"
#include "lib/alloc.h"
#include "lib/buf.h"

#include "sampler.skel.h"

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/capability.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

struct sampler {
	struct sampler_bpf *skel;
	struct ring_buffer *rb;
	struct sampler_opts opts;
	int *perf_fds;
	struct bpf_link **links;
	struct bpf_link *switch_in; /* off-CPU: the kprobe, on kernels without sched_exit_tp */
	int switch_in_tp;           /* off-CPU: the kernel has sched_exit_tp */
	int cgroup_events;          /* EVENT_CGROUP records are sent */
	int ncpus;
	int *cpus;
	sampler_record_fn fn;
	void *fn_ctx;
	int fn_ret;
	uint64_t bad_records;
};

/* Parse a CPU list like "0-3,5" into a new array. */
static int parse_cpu_list(const char *s, int **cpus_out, int *n_out)
{
	int *cpus = NULL, n = 0;
	size_t cap = 0;

	while (*s && *s != '\n') {
		char *end;
		long a = strtol(s, &end, 10), b;

		if (end == s || a < 0 || a > 65535)
			goto bad;
		b = a;
		if (*end == '-') {
			s = end + 1;
			b = strtol(s, &end, 10);
			if (end == s || b < a || b > 65535)
				goto bad;
		}
		for (; a <= b; a++) {
			ALLOC_GROW(cpus, (size_t)n + 1, cap);
			cpus[n++] = (int)a;
		}
		s = end;
		if (*s == ',')
			s++;
	}
	if (!n)
		goto bad;
	*cpus_out = cpus;
	*n_out = n;
	return 0;
bad:
	xfree(cpus);
	return -EINVAL;
}

static int online_cpus(int **cpus, int *n)
{
	struct buf b = BUF_INIT(4096);
	int err = buf_read_file(&b, "/sys/devices/system/cpu/online");

	if (!err)
		err = parse_cpu_list(b.data, cpus, n);
	buf_release(&b);
	return err;
}

static int explain_load_error(int err, struct errmsg *msg)
{
	if (err == -EPERM || err == -EACCES) {
		if (geteuid() != 0)
			return errmsg_set(msg, err, "loading the BPF sampler needs root (or CAP_BPF, "
					  "CAP_PERFMON and CAP_SYS_RESOURCE): run with sudo");
		return errmsg_set(msg, err, "the kernel refused to load the BPF sampler (%s): "
				  "check kernel.unprivileged_bpf_disabled, lockdown mode and "
				  "seccomp/container restrictions", strerror(-err));
	}
	if (access("/sys/kernel/btf/vmlinux", R_OK) != 0)
		return errmsg_set(msg, err, "this kernel has no BTF (/sys/kernel/btf/vmlinux is "
				  "missing): scorch needs a kernel built with CONFIG_DEBUG_INFO_BTF=y");
	if (err == -ENOSYS || err == -EOPNOTSUPP)
		return errmsg_set(msg, err, "BPF is not available in this kernel (%s): it needs "
				  "CONFIG_BPF_SYSCALL and a 5.17 or newer kernel", strerror(-err));
	return errmsg_set(msg, err, "cannot load the BPF sampler: %s (run with -v -v to see "
			  "the verifier's log)", strerror(-err));
}

/* Whether we hold cap (effective set). */
static int has_cap(int cap)
{
	struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct data[2];

	memset(data, 0, sizeof(data));
	if (syscall(SYS_capget, &hdr, data) < 0)
		return 0;
	return !!(data[cap / 32].effective & (1u << (cap % 32)));
}

/* Whether the kernel has the sched_exit_tp tracepoint (6.16+): the end of __schedule() in the
 * context of the thread that runs next, where off-CPU intervals end. */
/* Whether the kernel's BTF has the raw tracepoint `name` (a tp_btf program can attach). */
static int has_tracepoint(const char *name)
{
	struct btf *btf = btf__load_vmlinux_btf();
	char type[128];
	int found;

	if (!btf)
		return 0;
	snprintf(type, sizeof(type), "btf_trace_%s", name);
	found = btf__find_by_name_kind(btf, type, BTF_KIND_TYPEDEF) > 0;
	btf__free(btf);
	return found;
}

int sampler_open(const struct sampler_opts *opts, struct sampler **out, struct errmsg *err)
{
	struct sampler *s = xcalloc(1, sizeof(*s));
	size_t rb = opts->ringbuf_bytes ? opts->ringbuf_bytes : (8u << 20);
	int ret;

	/* Say it plainly before libbpf tries and fails. CAP_BPF is 39, CAP_PERFMON 38. */
	if (geteuid() != 0 && !has_cap(CAP_SYS_ADMIN) && (!has_cap(39) || !has_cap(38))) {
		xfree(s);
		return errmsg_set(err, -EPERM, "profiling with eBPF needs root (or the capabilities "
				  "CAP_BPF and CAP_PERFMON): run with sudo");
	}
	s->opts = *opts;
	if (s->opts.freq_hz <= 0)
		s->opts.freq_hz = 99;
	if (rb & (rb - 1)) {
		ret = errmsg_set(err, -EINVAL, "ring buffer size %zu is not a power of two", rb);
		goto fail;
	}
	ret = online_cpus(&s->cpus, &s->ncpus);
	if (ret) {
		ret = errmsg_set(err, ret, "cannot read the online CPUs from "
				 "/sys/devices/system/cpu/online");
		goto fail;
	}
	log_route_libbpf();
	s->skel = sampler_bpf__open();
	if (!s->skel) {
		ret = explain_load_error(-errno, err);
		goto fail;
	}
	s->skel->rodata->filter_pids = opts->filter_pids ? 1 : 0;
	s->skel->rodata->follow_children = opts->follow_children ? 1 : 0;
	s->skel->rodata->include_idle = opts->include_idle ? 1 : 0;
	s->skel->rodata->want_lineage = opts->lineage ? 1 : 0;
	if (opts->offcpu) {
		uint64_t period = opts->offcpu_period_ns ? opts->offcpu_period_ns :
				  1000000000ULL / (uint64_t)s->opts.freq_hz;

		if (period > SAMPLER_OFFCPU_MAX_PERIOD_NS)
			period = SAMPLER_OFFCPU_MAX_PERIOD_NS;
		s->skel->rodata->offcpu_min_ns = opts->offcpu_min_ns;
		s->skel->rodata->offcpu_period_ns = period;
		s->skel->rodata->offcpu_rate_cost_ns = opts->offcpu_max_rate ?
			1000000000ULL / opts->offcpu_max_rate : 0;
		/* a burst of an eighth of a second's worth */
		s->skel->rodata->offcpu_rate_burst_ns = 125000000ULL;
		s->switch_in_tp = has_tracepoint("sched_exit_tp");
		/* one switch-in program: the tracepoint where the kernel has it */
		bpf_program__set_autoload(s->switch_in_tp ? s->skel->progs.offcpu_switch_in_kprobe :
					  s->skel->progs.offcpu_switch_in, false);
	} else {
		bpf_program__set_autoload(s->skel->progs.offcpu_switch_out, false);
		bpf_program__set_autoload(s->skel->progs.offcpu_switch_in, false);
		bpf_program__set_autoload(s->skel->progs.offcpu_switch_in_kprobe, false);
		bpf_program__set_autoload(s->skel->progs.offcpu_seed, false);
	}
	/* cgroup moves matter to the agent's labels only (its container ids) */
	s->cgroup_events = opts->lineage && has_tracepoint("cgroup_attach_task") &&
			   has_tracepoint("cgroup_transfer_tasks") && has_tracepoint("cgroup_rename");
	if (!s->cgroup_events) {
		bpf_program__set_autoload(s->skel->progs.on_cgroup_attach, false);
		bpf_program__set_autoload(s->skel->progs.on_cgroup_transfer, false);
		bpf_program__set_autoload(s->skel->progs.on_cgroup_rename, false);
	}
	s->skel->rodata->time_phases = opts->time_phases ? 1 : 0;
	s->skel->rodata->capture_errors = opts->capture_errors ? 1 : 0;
	if (opts->configure)
		opts->configure(opts->configure_ctx, s->skel);
	bpf_map__set_max_entries(s->skel->maps.events, (uint32_t)rb);
	if (opts->unwind_entries)
		bpf_map__set_max_entries(s->skel->maps.unw_entries, opts->unwind_entries);
	ret = sampler_bpf__load(s->skel);
	if (ret) {
		ret = explain_load_error(ret < 0 ? ret : -errno, err);
		goto fail;
	}
	*out = s;
	return 0;
fail:
	sampler_close(s);
	return ret;
}

int sampler_add_pid(struct sampler *s, int pid)
{
	__u32 key = (__u32)pid;
	__u8 one = 1;

	if (bpf_map__update_elem(s->skel->maps.target_pids, &key, sizeof(key), &one, sizeof(one),
				 BPF_ANY))
		return -errno;
	return 0;
}

static int open_perf_event(int cpu, int freq)
{
	struct perf_event_attr attr;

	memset(&attr, 0, sizeof(attr));
	attr.size = sizeof(attr);
	attr.type = PERF_TYPE_SOFTWARE;
	attr.config = PERF_COUNT_SW_CPU_CLOCK;
	attr.freq = 1;
	attr.sample_freq = (uint64_t)freq;
	return (int)syscall(__NR_perf_event_open, &attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
}

/* kernel.perf_event_max_sample_rate, or -1. The kernel lowers it by itself when sampling
 * interrupts take too long. */
static long max_sample_rate(void)
{
	struct buf b = BUF_INIT(64);
	long v = -1;

	if (buf_read_file(&b, "/proc/sys/kernel/perf_event_max_sample_rate") == 0 && b.len)
		v = strtol(b.data, NULL, 10);
	buf_release(&b);
	return v;
}

static int on_ring_record(void *ctx, void *data, size_t size)
{
	struct sampler *s = ctx;
	const struct event_hdr *hdr = data;

	if (size < sizeof(*hdr) || hdr->version != SCORCH_EVENT_VERSION || hdr->size > size) {
		s->bad_records++;
		return 0;
	}
	s->fn_ret = s->fn(s->fn_ctx, hdr, size);
	return s->fn_ret;
}

/* The kernel's name of finish_task_switch(): the compiler may have cloned it
 * ("finish_task_switch.isra.0"), and kprobes attach to the name kallsyms shows. */
static int switch_in_symbol(char *name, size_t len)
{
	FILE *f = fopen("/proc/kallsyms", "re");
	char line[512];
	int found = -ENOENT;

	if (!f)
		return -errno;
	while (found && fgets(line, sizeof(line), f)) {
		char *sym = strchr(line, ' '), *end;

		if (!sym || !(sym = strchr(sym + 1, ' ')))
			continue;
		sym++;
		end = sym + strcspn(sym, " \t\n");
		*end = '\0';
		if (!strncmp(sym, "finish_task_switch", 18) && (!sym[18] || sym[18] == '.') &&
		    (size_t)(end - sym) < len) {
			memcpy(name, sym, (size_t)(end - sym) + 1);
			found = 0;
		}
	}
	fclose(f);
	return found;
}

/* Kernels without sched_exit_tp: the switch-in program as a kprobe on finish_task_switch(). */
static int attach_switch_in_kprobe(struct sampler *s, struct errmsg *err)
{
	char name[128];
	int ret = switch_in_symbol(name, sizeof(name));

	if (ret)
		return errmsg_set(err, ret, "off-CPU profiling needs the sched_exit_tp tracepoint "
				  "(Linux 6.16+) or a kprobe on finish_task_switch, which "
				  "/proc/kallsyms does not list (%s)", strerror(-ret));
	s->switch_in = bpf_program__attach_kprobe(s->skel->progs.offcpu_switch_in_kprobe, false,
						  name);
	if (!s->switch_in) {
		ret = -errno;
		return errmsg_set(err, ret, "off-CPU profiling needs the sched_exit_tp tracepoint "
				  "(Linux 6.16+) or a kprobe on '%s': %s (is the kernel built "
				  "with CONFIG_KPROBES?)", name, strerror(-ret));
	}
	log_debug("off-CPU: switch-in probe on %s", name);
	return 0;
}

/* Run offcpu_seed over every task once: threads blocked now get a mark, so their wait counts
 * from now on. A failure only loses those waits, and is said. */
static void seed_blocked(struct sampler *s)
{
	struct bpf_link *link = s->skel->links.offcpu_seed;
	char buf[64];
	int fd;

	if (!link) {
		log_warn("off-CPU: threads blocked when profiling started are not counted until "
			 "they run again (no task iterator)");
		return;
	}
	fd = bpf_iter_create(bpf_link__fd(link));
	if (fd < 0) {
		log_warn("off-CPU: threads blocked when profiling started are not counted until "
			 "they run again: %s", strerror(errno));
		return;
	}
	while (read(fd, buf, sizeof(buf)) > 0)
		;
	close(fd);
}

int sampler_attach(struct sampler *s, struct errmsg *err)
{
	int i, ret;

	s->perf_fds = xcalloc((size_t)s->ncpus, sizeof(int));
	s->links = xcalloc((size_t)s->ncpus, sizeof(*s->links));
	for (i = 0; i < s->ncpus; i++)
		s->perf_fds[i] = -1;
	for (i = 0; i < s->ncpus && !s->opts.no_cpu; i++) {
		s->perf_fds[i] = open_perf_event(s->cpus[i], s->opts.freq_hz);
		if (s->perf_fds[i] < 0) {
			ret = -errno;
			if (ret == -EACCES || ret == -EPERM)
				return errmsg_set(err, ret, "perf_event_open on CPU %d was refused: "
						  "run as root or with CAP_PERFMON (kernel.perf_event_paranoid "
						  "is checked for unprivileged users)", s->cpus[i]);
			if (ret == -ENODEV)
				continue; /* offline since we read the list */
			if (ret == -EINVAL) {
				long max = max_sample_rate();

				if (max > 0 && s->opts.freq_hz > max)
					return errmsg_set(err, ret, "sampling at %d Hz is above the "
							  "kernel's limit of %ld Hz "
							  "(kernel.perf_event_max_sample_rate): use "
							  "a lower -F, or raise the limit with sysctl",
							  s->opts.freq_hz, max);
			}
			return errmsg_set(err, ret, "perf_event_open (cpu-clock) on CPU %d: %s",
					  s->cpus[i], strerror(-ret));
		}
		s->links[i] = bpf_program__attach_perf_event(s->skel->progs.on_sample, s->perf_fds[i]);
		if (!s->links[i]) {
			ret = -errno;
			return errmsg_set(err, ret, "cannot attach the sampler to CPU %d: %s",
					  s->cpus[i], strerror(-ret));
		}
	}
	ret = sampler_bpf__attach(s->skel);
	if (ret)
		return errmsg_set(err, ret, "cannot attach the %s tracepoints: %s",
				  s->opts.offcpu ? "fork/exec/exit/sched_switch" : "fork/exec/exit",
				  strerror(-ret));
	if (s->opts.offcpu) {
		if (!s->switch_in_tp) {
			ret = attach_switch_in_kprobe(s, err);
			if (ret)
				return ret;
		}
		seed_blocked(s);
	}
	s->rb = ring_buffer__new(bpf_map__fd(s->skel->maps.events), on_ring_record, s, NULL);
	if (!s->rb) {
		ret = -errno;
		return errmsg_set(err, ret, "cannot open the BPF ring buffer: %s", strerror(-ret));
	}
	return 0;
}

int sampler_cgroup_events(const struct sampler *s)
{
	return s->cgroup_events;
}

int sampler_poll(struct sampler *s, int timeout_ms, sampler_record_fn fn, void *ctx)
{
	int n, max = s->opts.lineage ? SAMPLER_AGENT_MAX_WAIT_MS : SAMPLER_MAX_WAIT_MS;

	s->fn = fn;
	s->fn_ctx = ctx;
	s->fn_ret = 0;
	/* Samples do not wake the reader (sampler.bpf.c: sample_wakeup()): wait at most
	 * SAMPLER_MAX_WAIT_MS so they are read while their processes most likely still run.
	 * Records that must be seen at once (snapshots, execs of what is read at once) wake us.
	 * Each wakeup costs some 30 us in a VM: 20 a second (50 ms) cost 0.06% of a core, 10 ms
	 * 0.3%. With lineage (the agent, whole machine, where that is most of what an idle
	 * agent spends) every sample of a process user space has not seen wakes us too, so the
	 * others can wait longer: what they need from their process is mostly cached already. */
	if (timeout_ms < 0 || timeout_ms > max)
		timeout_ms = max;
	n = ring_buffer__poll(s->rb, timeout_ms);
	/* drain what is there whether or not epoll said so */
	if (n >= 0 && !s->fn_ret) {
		int m = ring_buffer__consume(s->rb);

		n = m < 0 ? m : n + m;
	}
	if (s->fn_ret)
		return s->fn_ret;
	return n;
}

void sampler_stop(struct sampler *s)
{
	int i;

	for (i = 0; s->perf_fds && i < s->ncpus; i++) {
		if (s->perf_fds[i] >= 0)
			ioctl(s->perf_fds[i], PERF_EVENT_IOC_DISABLE, 0);
	}
	/* no new off-CPU intervals, and none ends any more */
	if (s->skel && s->skel->links.offcpu_switch_out) {
		bpf_link__destroy(s->skel->links.offcpu_switch_out);
		s->skel->links.offcpu_switch_out = NULL;
	}
	if (s->skel && s->skel->links.offcpu_switch_in) {
		bpf_link__destroy(s->skel->links.offcpu_switch_in);
		s->skel->links.offcpu_switch_in = NULL;
	}
	bpf_link__destroy(s->switch_in);
	s->switch_in = NULL;
}

int sampler_stats(struct sampler *s, uint64_t out[STAT__COUNT])
{
	int ncpu = libbpf_num_possible_cpus();
	uint64_t *vals;
	__u32 key;
	int i;

	if (ncpu <= 0)
		return -EINVAL;
	vals = xcalloc((size_t)ncpu, sizeof(uint64_t));
	for (key = 0; key < STAT__COUNT; key++) {
		out[key] = 0;
		if (bpf_map__lookup_elem(s->skel->maps.stats, &key, sizeof(key), vals,
					 (size_t)ncpu * sizeof(uint64_t), 0))
			continue;
		for (i = 0; i < ncpu; i++)
			out[key] += vals[i];
	}
	xfree(vals);
	return 0;
}

int sampler_phases(struct sampler *s, uint64_t out[2 * PHASE__COUNT])
{
	int ncpu = libbpf_num_possible_cpus();
	uint64_t *vals;
	__u32 key;
	int i;

	if (ncpu <= 0)
		return -EINVAL;
	vals = xcalloc((size_t)ncpu, sizeof(uint64_t));
	for (key = 0; key < 2 * PHASE__COUNT; key++) {
		out[key] = 0;
		if (bpf_map__lookup_elem(s->skel->maps.phases, &key, sizeof(key), vals,
					 (size_t)ncpu * sizeof(uint64_t), 0))
			continue;
		for (i = 0; i < ncpu; i++)
			out[key] += vals[i];
	}
	xfree(vals);
	return 0;
}

int sampler_prog_stats(struct sampler *s, uint64_t *run_time_ns, uint64_t *run_cnt)
{
	struct bpf_prog_info info;
	__u32 len = sizeof(info);

	memset(&info, 0, sizeof(info));
	if (bpf_obj_get_info_by_fd(bpf_program__fd(s->skel->progs.on_sample), &info, &len))
		return -errno;
	*run_time_ns = info.run_time_ns;
	*run_cnt = info.run_cnt;
	return info.run_cnt ? 0 : -ENODATA;
}

int sampler_offcpu_stats(struct sampler *s, uint64_t out[OFFCPU_STAT__COUNT])
{
	int ncpu = libbpf_num_possible_cpus(), i, j;
	struct offcpu_stats *vals;
	__u32 key = 0;

	memset(out, 0, OFFCPU_STAT__COUNT * sizeof(out[0]));
	if (!s->opts.offcpu)
		return 0;
	if (ncpu <= 0)
		return -EINVAL;
	vals = xcalloc((size_t)ncpu, sizeof(*vals));
	if (bpf_map__lookup_elem(s->skel->maps.offcpu_stats, &key, sizeof(key), vals,
				 (size_t)ncpu * sizeof(*vals), 0) == 0) {
		for (i = 0; i < ncpu; i++)
			for (j = 0; j < OFFCPU_STAT__COUNT; j++)
				out[j] += vals[i].v[j];
	}
	xfree(vals);
	return 0;
}

int sampler_offcpu_prog_stats(struct sampler *s, uint64_t *run_time_ns, uint64_t *run_cnt)
{
	struct bpf_program *progs[2] = { s->skel->progs.offcpu_switch_out,
					 s->switch_in_tp ? s->skel->progs.offcpu_switch_in :
					 s->skel->progs.offcpu_switch_in_kprobe };
	int i;

	*run_time_ns = *run_cnt = 0;
	if (!s->opts.offcpu)
		return -ENODATA;
	for (i = 0; i < 2; i++) {
		struct bpf_prog_info info;
		__u32 len = sizeof(info);

		memset(&info, 0, sizeof(info));
		if (bpf_obj_get_info_by_fd(bpf_program__fd(progs[i]), &info, &len))
			return -errno;
		*run_time_ns += info.run_time_ns;
		if (i == 0)
			*run_cnt = info.run_cnt; /* one switch-out per context switch */
	}
	return *run_cnt ? 0 : -ENODATA;
}

struct sampler_bpf *sampler_skel(struct sampler *s)
{
	return s->skel;
}

int sampler_ncpus(const struct sampler *s)
{
	return s->ncpus;
}

uint64_t sampler_bad_records(const struct sampler *s)
{
	return s->bad_records;
}

void sampler_close(struct sampler *s)
{
	int i;

	if (!s)
		return;
	ring_buffer__free(s->rb);
	bpf_link__destroy(s->switch_in);
	for (i = 0; s->links && i < s->ncpus; i++)
		bpf_link__destroy(s->links[i]);
	for (i = 0; s->perf_fds && i < s->ncpus; i++) {
		if (s->perf_fds[i] >= 0)
			close(s->perf_fds[i]);
	}
	sampler_bpf__destroy(s->skel);
	xfree(s->links);
	xfree(s->perf_fds);
	xfree(s->cpus);
	xfree(s);
}
