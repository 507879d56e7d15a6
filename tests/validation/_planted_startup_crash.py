"""A planted start-up failure on one rank, loaded by the collective worker through
TORCHENV_VALIDATE_EXTRA_CHECKS: rank 1 raises before init_process_group, as NCCL does when its
communicator cannot start."""


def before_init(ctx):
    if ctx["rank"] == 1:
        raise RuntimeError("planted: NCCL error in: ProcessGroupNCCL.cpp:1970, unhandled system "
                           "error (run with NCCL_DEBUG=INFO for details)")
