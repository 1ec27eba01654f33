// Package slurm hands multi-node benchmark runs to Slurm and follows them: it writes a readable
// sbatch script for a job (Script), submits it (Cluster.Submit), and follows it to its end while
// streaming the job's log (Cluster.Follow). Rival never schedules nodes itself; Slurm does.
//
// The script runs one task per node. Each task learns its rank from SLURM_NODEID and the rendezvous
// host from the first node of the allocation, exports them under both the names torchrun reads
// (PET_NODE_RANK, PET_MASTER_ADDR, PET_MASTER_PORT) and the names Megatron-style launchers read
// (NODE_RANK, MASTER_ADDR, MASTER_PORT), then runs the framework's launch on the host, inside a
// pyxis container (srun --container-image) or inside one `docker run` per node.
//
// Subpackage slurmtest starts a real single-host Slurm cluster for tests.
package slurm
