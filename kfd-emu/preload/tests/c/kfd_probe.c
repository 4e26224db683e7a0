/*
 * Looks at the GPU driver the way libhsakmt and libdrm do, with plain libc calls and no ROCm:
 * the KFD topology tree through stdio and directory streams, /dev/kfd ioctls (including one the
 * driver does not know), and a render node's stat, dup and DRM_IOCTL_VERSION. Under the kfd-emu
 * preload all of it is served by the emulator. Prints "key value" lines for the test to check.
 *
 * Built and run by kfd-emu/preload/tests/rocm.rs.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <limits.h>
#include <linux/close_range.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <sys/syscall.h>
#include <unistd.h>

#define TOPO "/sys/devices/virtual/kfd/kfd/topology"

/* kfd_ioctl.h's GET_VERSION and drm.h's struct drm_version, restated so the probe needs no
 * kernel or libdrm headers (Debian's linux/kfd_ioctl.h includes <drm/drm.h> from libdrm-dev). */
struct kfd_get_version_probe {
	unsigned int major_version, minor_version;
};
#define KFD_IOC_GET_VERSION_PROBE _IOR('K', 0x01, struct kfd_get_version_probe)

struct drm_version_probe {
	int version_major, version_minor, version_patchlevel;
	size_t name_len;
	char *name;
	size_t date_len;
	char *date;
	size_t desc_len;
	char *desc;
};
#define DRM_IOCTL_VERSION_PROBE _IOWR('d', 0x00, struct drm_version_probe)

static void fail(const char *what)
{
	printf("FAIL %s: %s\n", what, strerror(errno));
	exit(1);
}

/* Lists the PCI devices as hwloc does at start-up, before any GPU path: how many there are, and
 * how many of them are AMD's. */
static void list_pci_devices(void)
{
	DIR *d = opendir("/sys/bus/pci/devices");
	int total = 0, amd = 0;
	struct dirent *e;
	while (d && (e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		total++;
		char path[PATH_MAX], vendor[16] = {0};
		snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/vendor", e->d_name);
		FILE *f = fopen(path, "r");
		if (f && fgets(vendor, sizeof(vendor), f) && !strcmp(vendor, "0x1002\n"))
			amd++;
		if (f)
			fclose(f);
	}
	if (d)
		closedir(d);
	printf("pci_listed %d\npci_listed_amd %d\n", total, amd);
}

int main(void)
{
	list_pci_devices();
	/* Topology: count node directories, read a GPU node's properties. */
	DIR *d = opendir(TOPO "/nodes");
	if (!d)
		fail("opendir nodes");
	int nodes = 0;
	struct dirent *e;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.')
			nodes++;
	closedir(d);
	printf("nodes %d\n", nodes);

	FILE *f = fopen(TOPO "/nodes/1/properties", "r");
	if (!f)
		fail("fopen properties");
	char key[128];
	unsigned long long value, minor = 0, location = 0;
	while (fscanf(f, "%127s %llu", key, &value) == 2) {
		if (!strcmp(key, "gfx_target_version"))
			printf("gfx_target_version %llu\n", value);
		if (!strcmp(key, "drm_render_minor"))
			minor = value;
		if (!strcmp(key, "location_id"))
			location = value;
	}
	fclose(f);

	/* The GPU's PCI device, at the bus address the topology gives (as hwloc finds it). */
	char pci[96];
	snprintf(pci, sizeof(pci), "/sys/bus/pci/devices/0000:%02llx:%02llx.%llx/", location >> 8,
		 (location >> 3) & 0x1f, location & 7);
	char pci_file[128], text[32] = {0};
	const char *names[] = {"vendor", "class", "numa_node"};
	for (unsigned i = 0; i < 3; i++) {
		snprintf(pci_file, sizeof(pci_file), "%s%s", pci, names[i]);
		FILE *pf = fopen(pci_file, "r");
		printf("pci_%s %s", names[i], pf && fgets(text, sizeof(text), pf) ? text : "missing\n");
		if (pf)
			fclose(pf);
	}
	snprintf(pci_file, sizeof(pci_file), "%sconfig", pci);
	unsigned char config[64] = {0};
	FILE *cf = fopen(pci_file, "rb");
	if (cf) {
		if (fread(config, 1, sizeof(config), cf) != sizeof(config))
			memset(config, 0, sizeof(config));
		fclose(cf);
	}
	printf("pci_config_ids %02x%02x:%02x%02x\n", config[1], config[0], config[3], config[2]);
	struct stat st;
	if (stat("/sys/class/kfd/kfd/topology/generation_id", &st) != 0)
		fail("stat generation_id");
	printf("class_link ok\n");

	/* /dev/kfd. */
	int kfd = open("/dev/kfd", O_RDWR | O_CLOEXEC);
	if (kfd < 0)
		fail("open /dev/kfd");
	struct kfd_get_version_probe v = {0};
	if (ioctl(kfd, KFD_IOC_GET_VERSION_PROBE, &v) != 0)
		fail("GET_VERSION");
	printf("kfd_version %u.%u\n", v.major_version, v.minor_version);
	char junk[40] = {0};
	int r = ioctl(kfd, _IOWR('K', 0x82, char[40]), junk);
	printf("unknown_ioctl %d %s\n", r, r ? strerror(errno) : "ok");
	char byte;
	r = (int)read(kfd, &byte, 1);
	printf("read_kfd %d %s\n", r, r < 0 ? strerror(errno) : "ok");
	if (fstat(kfd, &st) != 0)
		fail("fstat kfd");
	printf("kfd_is_chr %d\n", S_ISCHR(st.st_mode) ? 1 : 0);

	/* KFD serves only the process that opened it: a forked child gets EBADF on the inherited
	 * descriptor, and a device of its own when it opens /dev/kfd itself. */
	fflush(stdout);
	pid_t child = fork();
	if (child < 0)
		fail("fork");
	if (child == 0) {
		struct kfd_get_version_probe cv = {0};
		int cr = ioctl(kfd, KFD_IOC_GET_VERSION_PROBE, &cv);
		int inherited_ebadf = cr == -1 && errno == EBADF;
		int own = open("/dev/kfd", O_RDWR | O_CLOEXEC);
		int own_ok = own >= 0 && ioctl(own, KFD_IOC_GET_VERSION_PROBE, &cv) == 0 &&
			     cv.major_version == 1;
		_exit(inherited_ebadf && own_ok ? 0 : 1);
	}
	int status = 0;
	if (waitpid(child, &status, 0) != child)
		fail("waitpid");
	printf("forked_child_ebadf %s\n",
	       WIFEXITED(status) && WEXITSTATUS(status) == 0 ? "yes" : "no");

	/* What glibc and the VFS do for any device file. */
	printf("fstatat_empty_chr %d\n",
	       fstatat(kfd, "", &st, AT_EMPTY_PATH) == 0 && S_ISCHR(st.st_mode));
	printf("fioclex %d\n", ioctl(kfd, FIOCLEX) == 0 && (fcntl(kfd, F_GETFD) & FD_CLOEXEC));
	printf("write_kfd %s\n", write(kfd, "x", 1) < 0 && errno == EINVAL ? "EINVAL" : "ok?");
	printf("o_directory %s\n",
	       open("/dev/kfd", O_RDONLY | O_DIRECTORY) < 0 && errno == ENOTDIR ? "ENOTDIR" : "opened?");
	char rp[PATH_MAX];
	printf("realpath %s\n", realpath("/dev/kfd", rp) ? rp : "(failed)");
	int odd = open("//dev/./kfd", O_RDWR);
	printf("odd_path %s\n", odd >= 0 ? "device" : "missing");
	if (odd >= 0)
		close(odd);
	printf("zero_padded_minor %s\n",
	       open("/dev/dri/renderD0128", O_RDWR) < 0 ? "missing" : "device?");
	/* A failed dup2 onto a device descriptor leaves it a device. */
	int kfd2 = dup(kfd);
	int bad = dup2(9999, kfd2);
	struct kfd_get_version_probe v2 = {0};
	printf("failed_dup2_keeps_device %d\n",
	       bad < 0 && ioctl(kfd2, KFD_IOC_GET_VERSION_PROBE, &v2) == 0);
	/* A descriptor closed behind the interposer's back, its number reused by a plain file. */
	if (syscall(SYS_close_range, kfd2, kfd2, 0) != 0)
		fail("close_range");
	int plain = open("/proc/self/status", O_RDONLY);
	char line[8] = {0};
	printf("reused_number_is_plain %d\n",
	       plain == kfd2 && read(plain, line, 5) == 5 && fstat(plain, &st) == 0 &&
		       S_ISREG(st.st_mode));
	close(plain);

	/* The GPU's render node, as libdrm checks and duplicates it. */
	char path[64];
	snprintf(path, sizeof(path), "/dev/dri/renderD%llu", minor);
	int rnd = open(path, O_RDWR | O_CLOEXEC);
	if (rnd < 0)
		fail("open render node");
	if (fstat(rnd, &st) != 0)
		fail("fstat render");
	printf("render_rdev %u:%u\n", major(st.st_rdev), minor(st.st_rdev));
	snprintf(path, sizeof(path), "/sys/dev/char/%u:%u/device/drm", major(st.st_rdev),
		 minor(st.st_rdev));
	printf("drm_dir %s\n", stat(path, &st) == 0 && S_ISDIR(st.st_mode) ? "yes" : "no");
	int dup_fd = fcntl(rnd, F_DUPFD_CLOEXEC, 0);
	if (dup_fd < 0)
		fail("dup render");
	close(rnd);
	char name[32] = {0};
	struct drm_version_probe dv = {0};
	dv.name = name;
	dv.name_len = sizeof(name) - 1;
	if (ioctl(dup_fd, DRM_IOCTL_VERSION_PROBE, &dv) != 0)
		fail("DRM_IOCTL_VERSION");
	printf("drm_driver %s %d\n", name, dv.version_major);
	close(dup_fd);
	close(kfd);
	printf("done\n");
	return 0;
}
