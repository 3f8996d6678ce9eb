/*
 * Runs a program under ptrace, one instruction at a time, and prints the
 * name of every function of its main executable in the order the program
 * first executes it (scripts/link-order turns that into
 * compiler/cli/link-order.txt).
 *
 * usage: link-order-trace SYMBOLS OUT PROGRAM [ARG...]
 *   SYMBOLS: `nm -n --defined-only PROGRAM` output (address, type, name);
 *   OUT: where the function names go, one per line.
 *
 * A child made with clone() is traced too until it calls execve (the
 * launch's child runs the parent's code until then); what it execs is not.
 * Single-stepping costs about a microsecond per instruction, so a run of
 * a million instructions takes a minute or two.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

struct sym {
	unsigned long addr;
	char *name;
	int printed;
};

static struct sym *syms;
static size_t nsyms;

static void load_symbols(const char *path)
{
	FILE *f = fopen(path, "r");
	if (!f) {
		perror(path);
		exit(2);
	}
	size_t cap = 0;
	char line[4096];
	while (fgets(line, sizeof line, f)) {
		unsigned long addr;
		char type;
		char name[4000];
		if (sscanf(line, "%lx %c %3999s", &addr, &type, name) != 3)
			continue;
		if (!strchr("tTwWiI", type))
			continue;
		if (nsyms == cap) {
			cap = cap ? 2 * cap : 4096;
			syms = realloc(syms, cap * sizeof *syms);
			if (!syms)
				exit(2);
		}
		syms[nsyms].addr = addr;
		syms[nsyms].name = strdup(name);
		syms[nsyms].printed = 0;
		nsyms++;
	}
	fclose(f);
}

/* The symbol at or before `offset` (the list is sorted by address). */
static struct sym *symbol_for(unsigned long offset)
{
	size_t lo = 0, hi = nsyms;
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;
		if (syms[mid].addr <= offset)
			lo = mid;
		else
			hi = mid;
	}
	return nsyms && syms[lo].addr <= offset ? &syms[lo] : NULL;
}

/* The load address and executable range of the main program of `pid`. */
static void program_range(pid_t pid, unsigned long *base, unsigned long *lo,
			  unsigned long *hi)
{
	char path[64], line[4096];
	snprintf(path, sizeof path, "/proc/%d/maps", pid);
	FILE *f = fopen(path, "r");
	if (!f) {
		perror(path);
		exit(2);
	}
	*base = *lo = *hi = 0;
	while (fgets(line, sizeof line, f)) {
		unsigned long a, b;
		char perm[5];
		if (sscanf(line, "%lx-%lx %4s", &a, &b, perm) != 3)
			continue;
		if (!*base)
			*base = a; /* the first mapping is the program's header */
		if (perm[2] == 'x' && !*lo) {
			*lo = a;
			*hi = b;
		}
	}
	fclose(f);
}

int main(int argc, char **argv)
{
	if (argc < 4) {
		fprintf(stderr, "usage: %s SYMBOLS OUT PROGRAM [ARG...]\n", argv[0]);
		return 2;
	}
	load_symbols(argv[1]);
	FILE *out = fopen(argv[2], "w");
	if (!out) {
		perror(argv[2]);
		return 2;
	}
	pid_t child = fork();
	if (child == 0) {
		ptrace(PTRACE_TRACEME, 0, 0, 0);
		execv(argv[3], argv + 3);
		_exit(127);
	}
	int status;
	if (waitpid(child, &status, 0) < 0 || !WIFSTOPPED(status)) {
		fprintf(stderr, "the program did not start under ptrace\n");
		return 2;
	}
	ptrace(PTRACE_SETOPTIONS, child, 0,
	       PTRACE_O_EXITKILL | PTRACE_O_TRACECLONE | PTRACE_O_TRACEVFORK |
		       PTRACE_O_TRACEFORK | PTRACE_O_TRACEEXEC);
	unsigned long base, lo, hi;
	program_range(child, &base, &lo, &hi);
	long steps = 0;
	int exit_code = -1;
	ptrace(PTRACE_SINGLESTEP, child, 0, 0);
	for (;;) {
		pid_t pid = waitpid(-1, &status, __WALL);
		if (pid < 0) {
			if (errno == EINTR)
				continue;
			break; /* no tracee left */
		}
		if (WIFEXITED(status) || WIFSIGNALED(status)) {
			if (pid == child)
				exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
			continue;
		}
		if (!WIFSTOPPED(status))
			continue;
		int event = status >> 16;
		int sig = WSTOPSIG(status);
		if (event == PTRACE_EVENT_EXEC && pid != child) {
			/* A launched child became another program: stop tracing it. */
			ptrace(PTRACE_DETACH, pid, 0, 0);
			continue;
		}
		if (event != 0 || sig == SIGTRAP || sig == SIGSTOP) {
			/* A step, a clone/exec event, or a new child's first stop. */
			sig = 0;
		}
		struct user_regs_struct regs;
		if (ptrace(PTRACE_GETREGS, pid, 0, &regs) == 0 && regs.rip >= lo &&
		    regs.rip < hi) {
			struct sym *s = symbol_for(regs.rip - base);
			if (s && !s->printed) {
				s->printed = 1;
				fprintf(out, "%s\n", s->name);
			}
		}
		steps++;
		ptrace(PTRACE_SINGLESTEP, pid, 0, sig);
	}
	if (fclose(out) != 0) {
		perror(argv[2]);
		return 2;
	}
	fprintf(stderr, "%ld instructions traced; the program exited with %d\n", steps, exit_code);
	return exit_code == 0 ? 0 : 1;
}
