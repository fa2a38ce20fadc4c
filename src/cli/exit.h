/*
 * exit.h - the exit status of every command, and the words --help and the
 * man page give them. Below everything in src/cli that may end a command.
 */
#ifndef TINSPECT_CLI_EXIT_H
#define TINSPECT_CLI_EXIT_H

/* Exit status, one scheme for every command (man page: EXIT STATUS; CLI_EXIT_TABLE). */
enum {
	EXIT_OK = 0,
	EXIT_NEGATIVE = 1, /* the answer is no: a finding, a mismatch, a step that raised or does not fit, a refused file */
	EXIT_USAGE = 2,
	EXIT_INPUT = 3,    /* unreadable or invalid input */
	EXIT_RESOURCE = 4, /* I/O or resource failure: a path that cannot be opened as a file, memory */
	EXIT_UNDECIDED = 5, /* cannot tell: the answer needs what the input does not give */
	EXIT_NETWORK = 6   /* a server or the network failed: an HTTP error, a timeout, a file that changed */
};

/* The end of every --help, word for word the man page's EXIT STATUS list. */
#define CLI_EXIT_TABLE \
	"exit status (every command):\n" \
	"  0  success\n" \
	"  1  the answer is no: a finding, a mismatch, a step that raised or does not fit, a refused file\n" \
	"  2  usage error: an unknown command or option, a bad or useless option value\n" \
	"  3  unreadable or invalid input: a corrupt file, a bad description\n" \
	"  4  I/O or resource failure: a missing file, a directory, a FIFO, no permission,\n" \
	"     out of memory, a failed write\n" \
	"  5  cannot tell: the answer needs what the input does not give (a lower bound that fits)\n" \
	"  6  a server or the network failed on a URL: an HTTP error (404, 403...), a refused range,\n" \
	"     a timeout, a file that changed on the server while it was read\n"

#endif
