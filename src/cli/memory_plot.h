/*
 * memory_plot.h - `tinspect memory --plot FILE.svg`: the timeline of a
 * memory report as a standalone SVG 1.1 chart.
 *
 * The chart shows the live bytes after each unit of the step and the most
 * during it (ti_memory_point's live and high) against the step index, the
 * forward, backward and optimizer phases shaded and labelled, the peak
 * marked with its size and r->peak_step, a y axis in MiB or GiB ticks, a
 * legend, and --device-memory's size when one is given. Every text taken from the report or the title is escaped for XML;
 * the file needs no font, script or stylesheet from elsewhere.
 *
 * Writing goes through cli_outfile (outfile.h): a temporary file beside the
 * target, renamed into place only when complete, so a failed or
 * interrupted run leaves no half-written chart.
 * Ownership: nothing is kept; r and title are only read.
 */
#ifndef TINSPECT_CLI_MEMORY_PLOT_H
#define TINSPECT_CLI_MEMORY_PLOT_H

#include <stdbool.h>
#include <stdio.h>

#include "tinspect/memory.h"

/*
 * Writes the timeline of r as an SVG chart to path; EXIT_OK or an exit code
 * (cli.h), the message printed as other cli code does. An existing path is
 * refused (EXIT_USAGE): see cli_memory_plot_file to replace one.
 */
int cli_memory_plot(const ti_memory_report *r, const char *title, const char *path);

/* --device-memory on the chart: a line at its size, named; bytes 0 for none. */
typedef struct cli_plot_limit {
	int64_t bytes;
	const char *name; /* "H100-80GB", "24GiB" */
	int64_t need;     /* what the step needs of it (cuda: the reserved peak and overheads); 0: the peak */
} cli_plot_limit;

/*
 * The same, with outfile.h's rules in full: path is refused when it is one
 * of inputs (the model description), and replaced when it exists only if
 * force is true.
 */
int cli_memory_plot_file(const ti_memory_report *r, const char *title, const cli_plot_limit *limit,
                         const char *path, const char *const *inputs, int input_count, bool force);

/*
 * The SVG document itself, to f; false when f reported a write error. With
 * a limit (may be NULL), a dashed line at the device's size when it is
 * within a quarter above the highest point (the axis grows to hold it), else
 * a note that it is above the chart and the share the peak takes of it.
 */
bool cli_memory_plot_write(const ti_memory_report *r, const char *title, const cli_plot_limit *limit, FILE *f);

#endif
