/* pcm.h — the public C API of PCM, a library that makes iterative MPI applications malleable. */
#ifndef PCM_H
#define PCM_H

#include <mpi.h>
#include <stddef.h>

#include "pcm_types.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * The loop (examples/readme_loop.c, shown whole in README.md): register the data once, then call
 * PCM_Adapt at the top of every iteration (see "Register once, adapt anywhere" below).
 *   MPI_Comm world = MPI_COMM_WORLD;
 *   MPI_PCM_Init(&argc, &argv);
 *   PCM_Init(&world);
 *   if (PCM_Process_Status() == PCM_STARTED) {  // spawned processes receive theirs
 *     PCM_Dist_create(PCM_BLOCK, 1000, 4, 0, 0, size, &dist);
 *     ... x = malloc(this rank's part: PCM_Dist_local), fill it ...
 *   }
 *   PCM_Register_dist("x", (void **)&x, PCM_DOUBLE, &dist);  // moved by every reconfiguration
 *   PCM_Register_value("it", &it, PCM_INT, 1);              // the same on every process
 *   PCM_Resume(&world);              // a process of any origin now holds the registered state
 *   for (; it < 100; it++) {
 *     int s = PCM_Adapt(&world);     // collective; cheap when nothing is pending
 *     if (s == PCM_RETIRED) return PCM_Exit();
 *     if (s < 0) break;              // an agreed error: the same on every process
 *     if (s == PCM_RESHAPED) ... a new world: rank, x and dist changed, derive again ...
 *     if (it % k == 0) PCM_Checkpoint(world, it);   // optional: a durable version
 *     ... compute, exchange on world ...
 *   }
 *   PCM_Finalize(world);
 *
 * Underneath are the paper's calls (Table 1; examples/readme_paper.c, docs/user/paper-calls.md),
 * with which the application moves its own data: PCM_Status at the top of every iteration,
 * PCM_Store by the process that migrates and PCM_Load by its replacement, PCM_Reconfigure,
 * PCM_Split/PCM_Merge, PCM_Commit. Code written against the paper:
 *   if (PCM_Process_Status() != PCM_STARTED) { PCM_Comm_rank(world, &rank); PCM_Load(...); }
 *   for (...) {
 *     int s = PCM_Status(world);
 *     if (s == PCM_MIGRATE) PCM_Store(...);
 *     if (s == PCM_MIGRATE || s == PCM_RECONFIGURE) PCM_Reconfigure(&world, argv[0]);
 *     ... PCM_SPLIT, PCM_MERGE: PCM_Split, PCM_Merge; world == MPI_COMM_NULL: retired ...
 *   }
 *
 * Conventions
 * - Every call returns PCM_SUCCESS (0) or a negative PCM_ERR_* code, except PCM_Status and
 *   PCM_Process_Status, which return a state (see below) and report failure as PCM_ERROR.
 * - After a failure, PCM_Last_error() gives a message that says what went wrong.
 * - Calls marked "collective" must be called by every process of the PCM world, and return the
 *   same code on every process.
 * - libpcm sets MPI_ERRORS_RETURN on MPI_COMM_WORLD and on every PCM world it creates, so MPI
 *   calls on them return error codes instead of aborting: check them.
 * - The library never aborts the job, never calls exit(), and prints nothing to stdout. Its log
 *   goes to stderr; the level comes from PCM_LOG_LEVEL (trace, debug, info, warn, error, off;
 *   default warn).
 */

/*
 * MPI_PCM_Init — initialise MPI (MPI_Init) and PCM.
 * Reads the configuration file written by pcmd (path from the environment variable PCM_CONFIG,
 * default $HOME/.pcm/pcmd.conf) and checks that pcmd answers within PCM_CONNECT_TIMEOUT_MS
 * milliseconds (default 5000). argc/argv are passed to MPI_Init and remembered, so that processes
 * spawned by a reconfiguration get the same arguments.
 * Collective over MPI_COMM_WORLD. On error MPI stays initialised: call PCM_Finalize (or
 * MPI_Finalize) before exiting.
 * Errors: PCM_ERR_CONFIG, PCM_ERR_DAEMON, PCM_ERR_REFUSED, PCM_ERR_MPI, PCM_ERR_STATE (called
 * twice).
 */
int MPI_PCM_Init(int *argc, char ***argv);

/*
 * PCM_Init — make *comm the malleable PCM world.
 * In a process started by mpiexec, *comm is the communicator the job runs on (usually
 * MPI_COMM_WORLD); the library duplicates it, registers the job with pcmd and replaces *comm with
 * the duplicate. In a process spawned by a reconfiguration, *comm is ignored and replaced by the
 * rebuilt world. Use the returned communicator (PCM_COMM_WORLD in the paper) for all further work.
 * The job name shown by pcmctl comes from PCM_JOB (letters, digits, . _ -; at most 64); without
 * it pcmd chooses one.
 * Restart: with PCM_RESTART=1 in the environment (and the same PCM_JOB as the run that
 * committed), the job resumes from the newest version that verifies (PCM_Commit): every process
 * is PCM_RESTARTED, PCM_Restart_info gives the version's iteration and process count, and until
 * its first PCM_Status (its set-up) PCM_Load, PCM_Load_count and PCM_Load_dist read that version
 * (ranks numbered as when it was committed), at any process count; PCM_Load_redistribute
 * rebuilds a distributed array for the new count. From the first PCM_Status on, loads read what
 * the job stores, as in any run. PCM_ERR_NOT_FOUND when no version verifies.
 * Collective over *comm (started processes) or over the world being rebuilt (spawned ones).
 * Errors: PCM_ERR_ARG, PCM_ERR_STATE, PCM_ERR_DAEMON, PCM_ERR_REFUSED, PCM_ERR_MPI.
 */
int PCM_Init(MPI_Comm *comm);

/*
 * PCM_Process_Status — how this process came to be: PCM_STARTED, PCM_MIGRATED, PCM_SPLITTED, or
 * PCM_RETIRED after it left the world. PCM_ERROR before PCM_Init. Local.
 */
int PCM_Process_Status(void);

/*
 * PCM_Comm_rank — this process's rank in the PCM world comm (as MPI_Comm_rank, but also valid
 * right after a reconfiguration, before the application has asked MPI). Local.
 * Errors: PCM_ERR_ARG (rank NULL or comm not the PCM world), PCM_ERR_STATE.
 */
int PCM_Comm_rank(MPI_Comm comm, int *rank);

/*
 * PCM_Status — call once per iteration, at the top of the loop, with no message outstanding.
 * Rank 0 picks up a command from pcmd (asynchronously: it never waits for pcmd) and broadcasts
 * it. Returns PCM_NONE, PCM_MIGRATE (to the process that moves), PCM_RECONFIGURE (to the others),
 * PCM_SPLIT (the world grows: call PCM_Split), PCM_MERGE (it shrinks: call PCM_Merge),
 * PCM_STOP (the job is asked to end: a signal of PCM_STOP_SIGNALS reached a process, default
 * SIGTERM, SIGUSR1, SIGUSR2, or `pcmctl stop`; save the state, PCM_Commit, then PCM_Finalize;
 * every later call says it again; docs/user/preemption.md), or PCM_ERROR. Collective over comm;
 * every rank learns of a command at the same call.
 * Cost: the ranks agree (one small broadcast) once per window of calls that rank 0 sizes to last
 * about PCM_STATUS_WINDOW_US microseconds (default 1000; at most 256 calls; 0: agree at every
 * call); the other calls only count. A command from pcmd therefore waits up to one window
 * more: about 1 ms in a steady loop, or up to 256 iterations if iterations suddenly become much
 * longer than those measured before.
 * A process spawned by a reconfiguration resumes at the iteration the mover stored (the one at
 * which PCM_Status announced the migration); its first PCM_Status returns PCM_NONE without
 * communicating, because the rest of the world has already made that call.
 */
int PCM_Status(MPI_Comm comm);

/*
 * PCM_Store — store count elements of type type from buf under (rank, key) in pcmd, replacing
 * what was there. rank is usually the caller's own rank. The data outlives this process.
 * Where this process sees pcmd's data directory (and PCM_CHECKPOINT_DIRECT is not 0), a store of
 * 64 KiB or more is written by the process itself into the job's staging directory there
 * (checksummed while written, fsynced) and pcmd records it; smaller ones, and every store of a
 * process that does not see the directory, travel to pcmd, which writes them. PCM_WRITE_DIRECT=1
 * writes those files with O_DIRECT, past the page cache (where the file system takes it): steadier
 * where new page-cache pages are dear, but a load soon after reads from the disk
 * (docs/user/checkpoints.md). Either way the call returns once the data is on disk (fsynced),
 * unless PCM_STORE_ASYNC=1: then it copies the data into memory the process keeps and returns,
 * and the next PCM_Commit writes it (see there); this process loads it at once, another once
 * that commit has been made or this process has reconfigured or finalized.
 * Local (each process talks to pcmd itself). PCM_Store, PCM_Load, PCM_Commit and a restart's
 * PCM_Init wait for pcmd up to PCM_DATA_TIMEOUT_MS (default 600000): their time grows with the
 * data; PCM_ERR_DAEMON after that. A store is atomic: the new data is written completely
 * before it replaces the old, so a store that fails leaves what was stored before under
 * (rank, key) loadable (a PCM_Commit is then refused until the key is stored again).
 * Errors: PCM_ERR_ARG, PCM_ERR_STATE, PCM_ERR_DAEMON, PCM_ERR_REFUSED, PCM_ERR_NOSPACE (pcmd's
 * disk is full; the message says how much was needed and free).
 */
int PCM_Store(int rank, const char *key, const void *buf, PCM_Datatype type, long count);

/*
 * PCM_Load — load what is stored under (rank, key) into buf, which holds count elements of type.
 * Any process of the job may load any rank's key, committed or not (a process that sees the
 * staging directory reads a key stored there itself, verifying its checksums).
 * The stored type and count must match exactly; use PCM_Load_count to learn them first.
 * Local. Errors: PCM_ERR_ARG, PCM_ERR_STATE, PCM_ERR_DAEMON, PCM_ERR_NOT_FOUND, PCM_ERR_TYPE,
 * PCM_ERR_COUNT.
 */
int PCM_Load(int rank, const char *key, void *buf, PCM_Datatype type, long count);

/*
 * PCM_Load_count — the type and element count stored under (rank, key). Either output may be NULL.
 * Local. Errors: as PCM_Load.
 */
int PCM_Load_count(int rank, const char *key, PCM_Datatype *type, long *count);

/*
 * PCM_Reconfigure — carry out the pending migration. Called by every process of the world after
 * PCM_Status returned PCM_MIGRATE or PCM_RECONFIGURE; the mover must have stored its state first.
 * One process is spawned with MPI_Comm_spawn (program: command, made absolute against the
 * working directory at start; arguments: those given to MPI_PCM_Init) on the target host, the
 * world is rebuilt in the same rank order with the new process in the mover's place, and *comm
 * is replaced by it. The old communicator is freed.
 * In the mover *comm becomes MPI_COMM_NULL: it has retired and must call PCM_Exit (or
 * PCM_Finalize) without further MPI communication.
 * Collective over *comm. If the spawn fails in a way MPI reports, every process gets
 * PCM_ERR_SPAWN and *comm is unchanged. (MPICH's hydra aborts the whole job on some spawn
 * failures; pcmd refuses the ones it can foresee.)
 * Errors: PCM_ERR_ARG, PCM_ERR_STATE (no pending command), PCM_ERR_SPAWN, PCM_ERR_MPI.
 */
int PCM_Reconfigure(MPI_Comm *comm, const char *command);

/*
 * PCM_Exit — end a retired process: it waits, using no CPU, until the job finalizes, then
 * finalizes MPI. Call it where the process would otherwise leave main. Local.
 * In a process whose job a stop ended (PCM_Adapt returned PCM_RETIRED after writing the last
 * version) it finalizes at once and returns PCM_EXIT_STOPPED (75): `return PCM_Exit();` from main
 * makes that the exit status, which pcmctl run and batch scripts read as "resume me".
 * Errors: PCM_ERR_STATE (the process has not retired: call PCM_Finalize), PCM_ERR_MPI.
 */
int PCM_Exit(void);

/*
 * PCM_Finalize — end PCM and MPI. In an active process: collective over comm (the PCM world),
 * tells pcmd the job has finished, wakes the processes that retired earlier, frees comm and calls
 * MPI_Finalize. In a retired process (comm is MPI_COMM_NULL), it is PCM_Exit. Also finalizes MPI
 * when PCM_Init failed or was never called.
 * Errors: PCM_ERR_MPI; a failure to reach pcmd is logged, not returned.
 */
int PCM_Finalize(MPI_Comm comm);

/*
 * Distributed data
 * ----------------
 * Split and merge move one distributed array: `units` units along the decomposed dimension (for
 * heat2d, columns), each of `unit_len` elements. A PCM_Dist says which units each rank owns: a
 * rank owns an ordered list of segments (runs of consecutive units). In a rank's buffer its
 * segments follow one another in global order, each with `halo` ghost units before and after it:
 *   [halo][segment 0][halo] [halo][segment 1][halo] ...
 * Ghost units are never moved; after a reconfiguration they are zero until the application
 * exchanges them. A block layout gives one segment per rank; cyclic and block-cyclic give several.
 * After a 1->N split or an N->1 merge the map is irregular; a collective resize (M->N) makes it
 * regular again.
 */
typedef struct PCM_Dist_s *PCM_Dist;

/*
 * PCM_Dist_create — a regular map of units x unit_len elements over size processes.
 * layout: PCM_BLOCK, PCM_CYCLIC or PCM_BLOCK_CYCLIC (block: units per block, else ignored).
 * Local. Free it with PCM_Dist_free. Errors: PCM_ERR_ARG.
 */
int PCM_Dist_create(int layout, long units, long unit_len, long block, long halo, int size,
                    PCM_Dist *dist);

/* PCM_Dist_free — frees *dist and sets it to NULL (NULL is accepted). Local. */
int PCM_Dist_free(PCM_Dist *dist);

/*
 * PCM_Dist_local — for rank: the number of segments it owns, its owned units, and the length in
 * elements of its buffer (halos included). Any output may be NULL. Local. Errors: PCM_ERR_ARG.
 */
int PCM_Dist_local(PCM_Dist dist, int rank, long *segments, long *units, long *elements);

/*
 * PCM_Dist_segment — segment `index` of rank: its first global unit, its number of units, and the
 * element offset of its first unit in the rank's buffer. Any output may be NULL. Local.
 * Errors: PCM_ERR_ARG.
 */
int PCM_Dist_segment(PCM_Dist dist, int rank, long index, long *first, long *units, long *offset);

/*
 * PCM_Store_dist / PCM_Load_dist — store a map under (rank, key) in pcmd like PCM_Store, and load
 * it into a new handle (free it with PCM_Dist_free); for a migrating process whose replacement
 * needs the current (possibly irregular) map. Local. Errors: as PCM_Store / PCM_Load.
 */
int PCM_Store_dist(int rank, const char *key, PCM_Dist dist);
int PCM_Load_dist(int rank, const char *key, PCM_Dist *dist);

/* PCM_Dist_owner — the rank that owns global unit `unit`. Local. Errors: PCM_ERR_ARG. */
int PCM_Dist_owner(PCM_Dist dist, long unit, int *rank);

/*
 * PCM_Dist_info — the map's process count, layout (PCM_BLOCK ... PCM_IRREGULAR), units,
 * unit_len, block and halo. Any output may be NULL. Local. Errors: PCM_ERR_ARG.
 */
int PCM_Dist_info(PCM_Dist dist, int *size, int *layout, long *units, long *unit_len, long *block,
                  long *halo);

/*
 * PCM_Split — carry out a pending split (PCM_Status returned PCM_SPLIT): 1->N (one process's data
 * spread over N processes) or M->N with N > M; pcmd decides which. A new world of N processes is
 * spawned as one group (so it communicates as fast as a world launched at that size), the data
 * moves to it directly over MPI, and every process of the old world retires.
 *   buf:       in: the caller's buffer, laid out by *dist, allocated with malloc (PCM frees it).
 *              out: NULL in the old processes; in the new ones a malloc'd buffer (the caller
 *              frees it with free()), laid out by the new *dist, halos zeroed. From 4 MiB up it
 *              is 2 MiB-aligned and asks for transparent huge pages (PCM_HUGEPAGES=0: not).
 *   type:      the element type (the same in every process).
 *   dist:      in: the current map; out: the new map (the old one is freed; NULL in old processes).
 *   iteration: in the old processes, the iteration to resume at; the new ones receive it.
 *   rank/size: out: the caller's rank and the world size in the new world (-1/0 once retired).
 *   comm:      in: the PCM world; out: the new world, or MPI_COMM_NULL in a retired process,
 *              which must then call PCM_Exit without further MPI communication.
 *   command:   the program to spawn (usually argv[0]), as for PCM_Reconfigure.
 * A process spawned by a split (PCM_Process_Status() == PCM_SPLITTED) calls PCM_Split right after
 * PCM_Init with *buf = NULL and *dist = NULL to receive its data, the map and the iteration.
 * With PCM_OVERLAP=1 (MPICH, MPI_THREAD_MULTIPLE) the spawn runs in the background from the
 * PCM_Status call that adopted the command, which returns PCM_NONE until it has finished; the new
 * processes meanwhile fault in buffers for the map and type this process's last PCM_Split or
 * PCM_Merge left (none before the first). PCM_Split then only moves the data
 * (docs/user/split-merge.md). A PCM_Split that names another program than this one spawns it then.
 * Collective over the old world and the new one. If the spawn fails in a way MPI reports, or the
 * program is not executable, every process gets PCM_ERR_SPAWN and keeps its world and data
 * (*buf, *dist and *comm are left as they were on any error). A rank that owns no units may pass
 * *buf = NULL.
 * Errors: PCM_ERR_ARG, PCM_ERR_STATE (no split pending), PCM_ERR_SPAWN, PCM_ERR_MPI.
 */
int PCM_Split(void **buf, PCM_Datatype type, PCM_Dist *dist, int *iteration, int *rank, int *size,
              MPI_Comm *comm, const char *command);

/* PCM_Split_Collective — the same as PCM_Split (the paper's name for the M->N form; which form
 * runs is pcmd's decision). */
int PCM_Split_Collective(void **buf, PCM_Datatype type, PCM_Dist *dist, int *iteration, int *rank,
                         int *size, MPI_Comm *comm, const char *command);

/*
 * PCM_Merge_datacnts — during a pending merge: the number of elements this process's buffer will
 * hold afterwards (halos included; 0 if it leaves) and the rank it will have (-1 if it leaves).
 * Informational: PCM_Merge allocates the buffer itself. Local (after PCM_Status).
 * Errors: PCM_ERR_ARG, PCM_ERR_STATE (no merge pending).
 */
int PCM_Merge_datacnts(PCM_Dist dist, long *count, int *merge_rank, MPI_Comm comm);

/*
 * PCM_Merge — carry out a pending merge (PCM_Status returned PCM_MERGE): N->1 (listed processes'
 * data gathered into one) or M->N with N < M. Data moves inside the world, the survivors form the
 * new world (ranks ordered by the data they own) and the others retire; except where the merge
 * gives a node back to Slurm (docs/ops/slurm.md): then the new world is spawned as a split's new
 * processes are, and every old process leaves (all get MPI_COMM_NULL; PCM_Merge_datacnts: 0, -1).
 * Arguments as PCM_Split (without command; *iteration is left as it is): in a survivor *buf and
 * *dist are replaced; in a leaver they become NULL and *comm MPI_COMM_NULL (call PCM_Exit).
 * With PCM_OVERLAP=1 the survivors' new buffers, for the map the last PCM_Split or PCM_Merge left,
 * are faulted in in the background before PCM_Status reports the merge (as for PCM_Split).
 * On any error, *buf, *dist and *comm are left as they were.
 * Collective over comm. Errors: PCM_ERR_ARG, PCM_ERR_STATE (no merge pending), PCM_ERR_MPI.
 */
int PCM_Merge(void **buf, PCM_Datatype type, PCM_Dist *dist, int *iteration, int *rank, int *size,
              MPI_Comm *comm);

/* PCM_Merge_Collective — the same as PCM_Merge (the paper's name for the M->N form). */
int PCM_Merge_Collective(void **buf, PCM_Datatype type, PCM_Dist *dist, int *iteration, int *rank,
                         int *size, MPI_Comm *comm);

/*
 * PCM_Commit — turn what every rank of the world has stored with PCM_Store into one consistent,
 * durable global version for `iteration` in pcmd. Every rank must have stored its part first
 * (each PCM_Store has completed when it returns; the call waits for all ranks). When ranks wrote
 * keys themselves (PCM_Store), the version is made of shards as PCM_Checkpoint's: their files
 * are linked into it, never copied, pcmd writes the keys stored through it into a shard per
 * rank, and one rename of the version's directory (after its manifest and the directory were
 * fsynced) commits it; otherwise pcmd copies the keys into one file (file, fsync, rename, fsync
 * of the directory, then a manifest with checksums). pcmd keeps the newest versions (pcmd
 * --keep). A version exists only once complete: after a crash the previous one is still there.
 * `pcmctl checkpoints JOB` lists them.
 * Collective over comm; the same code on every rank.
 * Errors: PCM_ERR_ARG, PCM_ERR_STATE, PCM_ERR_DAEMON, PCM_ERR_REFUSED (a rank stored nothing; a
 * rank's last PCM_Store failed; a valid version of `iteration` exists already, as for the
 * iteration a restarted job resumed from), PCM_ERR_NOSPACE (the disk is full: the previous
 * version stays valid), PCM_ERR_INTERNAL (another write failure).
 * With PCM_STORE_ASYNC=1 and keys stored since the last commit, PCM_Commit returns once every rank
 * has handed them to a thread of its own (the data was copied by PCM_Store): the threads write
 * them and pcmd makes the version when all have. Durability: the version exists once made; the
 * next PCM_Commit waits for it first and returns its failure (any of the errors above, or
 * PCM_ERR_DAEMON when pcmd did not make it) on every rank, naming its iteration; PCM_Finalize
 * waits for it and logs a failure. A crash before it is made leaves the previous version.
 */
int PCM_Commit(MPI_Comm comm, int iteration);

/*
 * PCM_Restart_info — in a restarted job, the iteration and process count of the version it
 * restarted from. Either output may be NULL. Local. Errors: PCM_ERR_STATE (not restarted).
 */
int PCM_Restart_info(int *iteration, int *nprocs);

/*
 * PCM_Load_redistribute — in a restarted job, before its first PCM_Status: fill buf, laid out for
 * `rank` by the map `to`, with the array that the version's ranks stored under key, laid out by the
 * map `from` (for example loaded with PCM_Load_dist from what rank 0 stored). `from` and `to` may
 * describe different process counts. Halos are left as they are. Local. Errors: PCM_ERR_ARG,
 * PCM_ERR_STATE, PCM_ERR_NOT_FOUND, PCM_ERR_TYPE, PCM_ERR_COUNT, PCM_ERR_DAEMON.
 */
int PCM_Load_redistribute(const char *key, PCM_Datatype type, PCM_Dist from, PCM_Dist to, int rank,
                          void *buf);

/*
 * PCM_Reconfig_times — seconds this process spent in the phases of its last PCM_Split or
 * PCM_Merge: spawning the new world, moving data (the context broadcast included), and rebuilding
 * the world (communicator and report to pcmd). Any output may be NULL. Local.
 */
int PCM_Reconfig_times(double *spawn, double *data, double *rebuild);

/*
 * Register once, adapt anywhere
 * -----------------------------
 * The calls below sit on top of the ones above and are what most applications need alone:
 * declare the data once, then call PCM_Adapt at the top of every iteration (the loop at the top
 * of this file). PCM_Adapt is PCM_Status plus whatever is pending, carried out for all the
 * registered data; after PCM_RESHAPED the application rebuilds what it derived from a map or
 * the rank.
 *
 * Every process registers the same names, in the same order, with the same types and counts
 * (PCM_Resume checks it). The library keeps the addresses given (of the application's variables,
 * not copies of them) and reads and writes them in PCM_Resume, PCM_Adapt and PCM_Checkpoint only.
 * Names: 1-48 of A-Z a-z 0-9 . _ - (keys beginning with "pcm." are the library's).
 * The calls are collective over the PCM world, unless said otherwise, and return the same code on
 * every process, so the application needs no votes of its own.
 */

/* PCM_Adapt: the world or a registered map changed (see PCM_Adapt). */
#define PCM_RESHAPED 6

/*
 * PCM_Register_dist — register a distributed array: *buf holds this process's part, laid out by
 * *dist (halos included, see PCM_Dist). The library moves it in every migration, split, merge and
 * resize, saves it in PCM_Checkpoint and restores it in a restart, replacing *buf and *dist with
 * the new buffer and map. *buf must come from malloc (or be NULL where the map gives the process
 * nothing): the library frees the buffers it replaces; the application frees the last one. A new
 * buffer's ghost units are zero. *buf and *dist may still be NULL when registering (a started
 * process sets them before PCM_Resume; a spawned one receives them there). Local.
 * Errors: PCM_ERR_ARG (bad name, NULL pointer, unknown type, name already registered),
 * PCM_ERR_STATE (after PCM_Resume: every process registers before it; in a retired process).
 */
int PCM_Register_dist(const char *name, void **buf, PCM_Datatype type, PCM_Dist *dist);

/*
 * PCM_Register_value — register count elements at value that every process holds alike (the
 * iteration counter, a time step, a replicated table). New processes receive them from the world
 * they join; PCM_Checkpoint saves rank 0's copy and a restart gives it to every process. Local.
 * Errors: PCM_ERR_ARG, PCM_ERR_STATE.
 */
int PCM_Register_value(const char *name, void *value, PCM_Datatype type, long count);

/*
 * PCM_Register_local — register count elements at value that are this process's own (a per-rank
 * counter, a random generator's state). They go with the process: the replacement of a migrated
 * process receives the mover's, a survivor of a merge keeps its own, and a restart at the same
 * process count gives rank r what rank r saved. Processes created by a split or a growing resize,
 * and every process of a restart at another count, start with them zeroed. Local.
 * Errors: PCM_ERR_ARG, PCM_ERR_STATE.
 */
int PCM_Register_local(const char *name, void *value, PCM_Datatype type, long count);

/* PCM_Unregister — forget a registration (the data stays where it is); before PCM_Resume only.
 * Local. Errors: PCM_ERR_ARG (no such name), PCM_ERR_STATE. */
int PCM_Unregister(const char *name);

/*
 * PCM_Resume — after PCM_Init and the registrations, bring this process to the registered state,
 * whatever its origin: a started process keeps what it has (its *buf and *dist must be set); the
 * replacement of a migrated process receives the mover's state (directly over MPI); a process
 * spawned by a split receives its part of every array, the new maps and the values; a restarted
 * process (PCM_RESTART=1) reads the newest valid version at any process count, laid out by the
 * map the application set in *dist if it has one for this world's size, else by the saved map
 * resized to this world (an irregular one becomes block). Call it exactly once.
 * Collective over the world, together with the survivors' PCM_Adapt of the same
 * reconfiguration. Returns PCM_SUCCESS or an agreed error code.
 * Errors: PCM_ERR_ARG (registrations differ between processes, or do not match the data
 * received or saved: PCM_ERR_TYPE / PCM_ERR_COUNT), PCM_ERR_STATE, PCM_ERR_NOT_FOUND, PCM_ERR_MPI,
 * PCM_ERR_DAEMON.
 */
int PCM_Resume(MPI_Comm *comm);

/*
 * PCM_Adapt — call once per iteration, at the top of the loop, with no message outstanding, in
 * place of PCM_Status. When nothing is pending it costs what PCM_Status costs. Otherwise it
 * carries out the pending migration, split, merge or resize for all registered data, replaces
 * *comm (and the registered buffers and maps), and returns:
 *   PCM_NONE      nothing changed;
 *   PCM_RESHAPED  this process is in a new world: its rank, the world's size or the registered
 *                 maps may have changed; rebuild what was derived from them (a halo plan);
 *   PCM_RETIRED   this process has left the world (*comm is MPI_COMM_NULL): call PCM_Exit
 *                 without further MPI communication;
 *   a negative PCM_ERR_* code, the same on every process (the world is left as it was where the
 *                 error allows it: call PCM_Finalize).
 * A spawn that fails in a way MPI reports leaves the old world intact: PCM_Adapt logs a warning,
 * pcmd records the failed command, and the call returns PCM_NONE.
 * When the job is asked to end (a signal of PCM_STOP_SIGNALS, default SIGTERM, SIGUSR1 and
 * SIGUSR2, reached any of its processes, or `pcmctl stop`), the call writes a last version of the
 * registered data at once (fsynced, committed before it returns), tells pcmd the job stopped and
 * returns PCM_RETIRED on every process (*comm is MPI_COMM_NULL): PCM_Exit then returns
 * PCM_EXIT_STOPPED at once, and a run with PCM_RESTART=1 resumes from that version
 * (docs/user/preemption.md). libpcm's handler only records the signal; one the application or
 * the MPI already handles is left alone.
 * When pcmd asks for a checkpoint (`pcmctl checkpoint`, its policy before a time limit), the call
 * also writes one, as PCM_Checkpoint(*comm, it) would, labelled with the iteration this call
 * begins (PCM_Status's count of calls, from the restart's version in a restarted job); a failed
 * write is logged and the job goes on.
 * Collective over *comm.
 */
int PCM_Adapt(MPI_Comm *comm);

/* PCM_Adapt_if_local: the call would have had to communicate; nothing was done. */
#define PCM_NOT_LOCAL 8

/*
 * PCM_Adapt_if_local — PCM_Adapt(comm) when that call is local: inside an agreement window with
 * nothing pending or due, it neither communicates, blocks nor writes, and returns PCM_NONE.
 * Otherwise it does nothing and returns PCM_NOT_LOCAL (also for a comm that is not the PCM world,
 * or before PCM_Resume): call PCM_Adapt. For language bindings, which can then skip what they
 * do around a call that may block (the Python module releases its GIL, the Fortran module checks
 * its arrays) on the common call. Costs what PCM_Adapt costs there.
 */
int PCM_Adapt_if_local(MPI_Comm *comm);

/*
 * PCM_Status_if_local — PCM_Status(comm) when that call is local: inside an agreement window with
 * nothing pending, it counts the call as PCM_Status does, neither communicates nor blocks, and
 * returns PCM_NONE. Otherwise it does nothing and returns PCM_NOT_LOCAL (also for a comm that is
 * not the PCM world): call PCM_Status. For language bindings, as PCM_Adapt_if_local (the Python
 * module keeps its GIL on the common call). PCM_ERROR as PCM_Status.
 */
int PCM_Status_if_local(MPI_Comm comm);

/*
 * PCM_Checkpoint — save every registered item and commit them as the durable version for
 * `iteration`. Each process writes its own shard of the version (an HDF5 file in pcmd's data
 * directory, straight from the registered data: its arrays' owned units, without ghosts, and
 * its local values; rank 0 also the values and maps), with a checksum per MiB computed from
 * memory, fsyncs it and tells pcmd; pcmd commits the version in one rename once every process
 * has. By default (PCM_CHECKPOINT_ASYNC=1) the call returns as soon as this process has copied
 * its registered data into staging memory (kept for the next version: the job's registered bytes
 * once more); the writing, the fsync and the commit go on in the background while the loop runs.
 * One version is in flight at most: the next PCM_Checkpoint (or PCM_Checkpoint_wait, a
 * reconfiguration, PCM_Finalize) waits for it first. A version counts only once committed: a
 * job that dies before restarts from the one before. With PCM_CHECKPOINT_ASYNC=0 the call
 * returns once the version is committed. A process that does not see pcmd's data directory
 * (another host without a shared file system), or any process when PCM_CHECKPOINT_DIRECT=0,
 * sends its shard through pcmd instead. In a restarted job, the iteration it restarted from is
 * already saved: the call returns PCM_SUCCESS without writing it again. A restart (PCM_Resume)
 * reads each process's share from the shards, verifying the chunks it reads; a version found
 * damaged is marked bad for good and the one before it is used.
 * Collective over comm; the same code on every process.
 * Errors: PCM_ERR_ARG, PCM_ERR_STATE, PCM_ERR_REFUSED (a valid version of `iteration` exists),
 * PCM_ERR_INTERNAL (a write failed: a full disk), PCM_ERR_DAEMON; nothing counts as a version
 * unless the call succeeds (and, in the background, the commit: a version in flight that was not
 * made is reported by the next of these calls, with the same code on every process, and that
 * call writes nothing — call it again).
 */
int PCM_Checkpoint(MPI_Comm comm, int iteration);

/*
 * PCM_Checkpoint_wait — wait until the version the last PCM_Checkpoint (or PCM_Adapt) started
 * is committed. Returns PCM_SUCCESS at once when none is in flight (and always with
 * PCM_CHECKPOINT_ASYNC=0). Collective over comm.
 * Errors: what made the version in flight fail (as PCM_Checkpoint's; the same on every
 * process), PCM_ERR_STATE.
 */
int PCM_Checkpoint_wait(MPI_Comm comm);

/*
 * Halo exchange for any map
 * -------------------------
 * A plan for filling the ghost units of a rank's buffer (laid out by a PCM_Dist, see above) from
 * the ranks that own those units: for each segment, `width` ghost units before it and after it
 * (width <= the map's halo; the rest of a wider ghost area is left alone). Ghosts outside
 * [0, units) are left alone too (no wrap-around). Ghosts this rank owns itself (another of its
 * segments) are copied locally. A unit that is a ghost of several of a rank's segments (cyclic
 * maps, width >= 2) fills each of them. These calls need MPI initialised but not MPI_PCM_Init,
 * nor pcmd: they work in any MPI program. A plan describes one map: after PCM_Adapt returns
 * PCM_RESHAPED, free it and create a new one.
 */
typedef struct PCM_Halo_s *PCM_Halo;

/* The MPI tag of PCM_Halo_exchange's messages. */
#define PCM_HALO_TAG 0x5043

/*
 * PCM_Halo_create — the plan for `rank` of map dist, for elements of type: one MPI datatype per
 * neighbour and direction, built once, so that each exchange moves ghosts without packing.
 * Local. Free it with PCM_Halo_free (before MPI_Finalize). On error *halo is left as it was.
 * Errors: PCM_ERR_ARG (NULL, bad rank, width < 0 or > the map's halo, unknown type),
 * PCM_ERR_STATE (MPI not initialised, or finalized), PCM_ERR_MPI.
 */
int PCM_Halo_create(PCM_Dist dist, int rank, long width, PCM_Datatype type, PCM_Halo *halo);

/*
 * PCM_Halo_exchange — fill buf's ghost units: one nonblocking message to and from each
 * neighbouring rank of comm, tag PCM_HALO_TAG, and memcpy for the ghosts this rank owns. comm's
 * ranks must be the map's: every rank of comm calls it, with its own plan, at the same point
 * (with no other message of tag PCM_HALO_TAG outstanding on comm). buf may be NULL where the map
 * gives the rank no units. Returns when buf's ghosts are filled and its owned units may change.
 * Errors: PCM_ERR_ARG (NULL plan or buf, comm's rank or size not the plan's; nothing is sent),
 * PCM_ERR_STATE (MPI not initialised), PCM_ERR_MPI (PCM_Last_error says which call).
 */
int PCM_Halo_exchange(PCM_Halo halo, void *buf, MPI_Comm comm);

/*
 * PCM_Halo_entries / PCM_Halo_entry — the plan's receives, for applications that move the data
 * themselves: entry i fills `units` ghost units at element offset ghost_offset of this rank's
 * buffer from peer's buffer at element offset source_offset (peer may be this rank). Entries
 * come in this rank's buffer order and are maximal (consecutive ghost units from one peer that
 * are contiguous in both buffers form one entry). Outputs of PCM_Halo_entry may be NULL. Local.
 * Errors: PCM_ERR_ARG (NULL plan or count, index not in [0, count)).
 */
int PCM_Halo_entries(PCM_Halo halo, long *count);
int PCM_Halo_entry(PCM_Halo halo, long index, int *peer, long *ghost_offset, long *source_offset,
                   long *units);

/* PCM_Halo_free — frees *halo and sets it to NULL (NULL is accepted). Local. */
int PCM_Halo_free(PCM_Halo *halo);

/*
 * PCM_Dist_gather — gather the owned units of every rank of comm (laid out by dist, comm's ranks
 * being the map's) into `global` on root, in global unit order: units * unit_len elements, no
 * ghosts. Each rank's units go from buf straight to their places in global (no packing copy).
 * `global` is only written on root (it may be NULL elsewhere); buf may be NULL where the map
 * gives the rank no units. Like PCM_Halo_*, it needs MPI but not MPI_PCM_Init.
 * Collective over comm; the ranks check their arguments together (including that they all pass
 * the same root, type and number of units) and return the same code.
 * Errors: PCM_ERR_ARG (NULL, comm's size differs from the map's, bad or differing root,
 * unknown type, comm an intercommunicator), PCM_ERR_STATE (MPI not initialised), PCM_ERR_MPI.
 */
int PCM_Dist_gather(PCM_Dist dist, const void *buf, PCM_Datatype type, int root, MPI_Comm comm,
                    void *global);

/*
 * PCM_Reconfig_last — the reconfiguration this process's world went through last (or has pending,
 * once PCM_Status or PCM_Adapt has announced it): its kind (PCM_MIGRATE, PCM_SPLIT for a split or
 * growing resize, PCM_MERGE for a merge or shrinking resize), the world's size before it, and
 * the wall-clock time (CLOCK_REALTIME, seconds since the epoch) at which the old world learnt of
 * it. Processes that a reconfiguration creates receive it from the old world, so that whichever
 * process reports the reconfiguration can say how long it took. Any output may be NULL. Local.
 * Errors: PCM_ERR_STATE (no reconfiguration yet).
 */
int PCM_Reconfig_last(int *kind, int *size_before, double *started);

/*
 * PCM_Reconfig_reason — who asked for that reconfiguration and why, as pcmd sent it: "policy: "
 * and the policy's reason with the figures it used (pcmd --policy auto), "drain of HOST", the text
 * a client sent with its command, or "operator command". Printable text (no control characters),
 * at most 400 bytes; written NUL-terminated into reason, cut at a character boundary (ending in
 * "...") to fit len bytes. Processes that a reconfiguration creates receive it too. Local.
 * Errors: PCM_ERR_ARG (reason NULL or len < 1), PCM_ERR_STATE (no reconfiguration yet).
 */
int PCM_Reconfig_reason(char *reason, int len);

/*
 * Topology (QCG-OMPI's colours): where the processes of a communicator are, level by level.
 * Level PCM_TOPO_SITE groups the processes of one site, level PCM_TOPO_HOST those of one host
 * (and site). A process's colour at a level is the lowest rank of comm in its group, so two
 * processes share a colour at a level exactly when they share that group, and colours are small
 * non-negative numbers. A process's host is its MPI_Get_processor_name (what pcmd is told and
 * shows); its site is the site pcmd's inventory gives that host (`pcmctl host add H --site S`),
 * else the PCM_SITE of that process's environment, else one unnamed site for all. Ask again after
 * PCM_Init/PCM_Resume and after every reconfiguration: processes move.
 */
#define PCM_TOPO_SITE 0
#define PCM_TOPO_HOST 1
#define PCM_TOPO_LEVELS 2

/*
 * PCM_Topology — this process's colour at each level of comm's topology: sets *nlevels to
 * PCM_TOPO_LEVELS and colors[PCM_TOPO_SITE], colors[PCM_TOPO_HOST]. Collective over comm (any
 * intracommunicator: the PCM world, one derived from it, MPI_COMM_WORLD); needs MPI but not
 * MPI_PCM_Init. With pcmd, rank 0 of comm asks it for the sites (one request).
 * Errors: PCM_ERR_ARG (NULL, MPI_COMM_NULL, an intercommunicator), PCM_ERR_STATE (MPI not
 * initialised), PCM_ERR_MPI.
 */
int PCM_Topology(MPI_Comm comm, int *nlevels, int colors[PCM_TOPO_LEVELS]);

/*
 * PCM_Host_comm — the processes of comm on this process's host (MPI_Comm_split by host colour,
 * ordered by rank in comm), for hierarchical collectives: reduce within the host, then among one
 * process per host. Collective over comm; free it with MPI_Comm_free. Errors: as PCM_Topology.
 */
int PCM_Host_comm(MPI_Comm comm, MPI_Comm *host_comm);

/* PCM_Last_error — the detailed message of this thread's last failed call ("" if none). */
const char *PCM_Last_error(void);

#ifdef __cplusplus
}
#endif

#endif /* PCM_H */
