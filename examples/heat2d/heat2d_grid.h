/* heat2d_grid.h — heat2d_pcm's grid laid out by a PCM map (any layout), and its reports. */
#ifndef HEAT2D_GRID_H
#define HEAT2D_GRID_H

#include "heat2d_common.h"
#include "pcm.h"

/*
 * This rank's part of the ny x nx grid, laid out by a PCM_Dist whose units are columns (ny
 * doubles each) with one ghost column around every segment:
 *   [ghost][segment 0][ghost] [ghost][segment 1][ghost] ...
 * mesh.cur is the buffer registered with PCM (PCM replaces it in reconfigurations); mesh.next is
 * its twin for the Jacobi step. When every rank holds one segment, in rank order (block layouts,
 * and what splits and merges of them leave), the buffer is exactly plain's mesh and plain's
 * exchange and step are used; otherwise PCM's halo plan and a step per segment.
 */
typedef struct Heat2dGrid {
  Heat2dMesh mesh;
  PCM_Dist dist;
  PCM_Halo halo; /* NULL when plain's exchange serves */
  int rank, nprocs;
  long nseg;
  long *seg; /* per segment: first column, columns, element offset in the buffer */
} Heat2dGrid;

/*
 * A started or restarted process: the map that --layout asks for over nprocs processes, and with
 * fill != 0 the initial grid in a new mesh.cur (top row 100, the rest 0). Local; 0 or -1 with
 * PCM_Last_error() or errno saying why.
 */
int heat2d_grid_layout(Heat2dGrid *g, const Heat2dOptions *opt, int rank, int nprocs, int fill);

/* After a start, PCM_Resume or a reconfiguration: rebuilds next, the segments and the exchange
 * for the current map and world. Local; 0 or -1 (PCM_Last_error() says why). */
int heat2d_grid_adopt(Heat2dGrid *g, MPI_Comm world);

/* Fills the ghost columns from their owners; 0 or -1. Every rank of world calls it. */
int heat2d_grid_exchange(Heat2dGrid *g, MPI_Comm world);

/* One Jacobi sweep over the owned columns, then swaps cur and next. Local. */
void heat2d_grid_step(Heat2dGrid *g);

/* As heat2d_checksum, for any map. Collective; 0, -1 (on every rank), or -3 on rank 0 if the
 * dump could not be written (reported). */
int heat2d_grid_checksum(const Heat2dGrid *g, MPI_Comm world, const char *dump, uint64_t *sum);

/* Frees everything (the map and the registered buffer included). */
void heat2d_grid_free(Heat2dGrid *g);

/* Registers the progress interval's start (PCM_Register_value), so that whichever process is
 * rank 0 after a reconfiguration measures the same interval. Returns a PCM code. */
int heat2d_progress_register(Heat2dProgress *p);

/*
 * After PCM_Resume: sets up progress and, on rank 0, reports how this process came to be: the
 * trace's start row, a restart ("heat2d: restarted from iteration K (M -> N processes)") or the
 * reconfiguration that spawned it (as heat2d_progress_reconfig).
 */
void heat2d_progress_start(Heat2dProgress *p, const Heat2dOptions *opt, MPI_Comm world, int it,
                           int reconfigs, int origin);

/* After a reconfiguration at iteration it: rank 0 prints "heat2d: KIND N at iter IT T s (procs
 * A -> B)" and writes the trace's rows (the interval cut at the reconfiguration's start, then
 * the event); every process starts a new interval. */
void heat2d_progress_reconfig(Heat2dProgress *p, MPI_Comm world, int it, int reconfigs);

/* A retired process: frees its grid, parks in PCM_Exit and prints how little CPU that took
 * ("heat2d: retired parked S s cpu C s"). Returns the exit code. */
int heat2d_retire(Heat2dGrid *g, Heat2dProgress *p);

#endif /* HEAT2D_GRID_H */
