/* commands.h: every `scorch <command>` entry point. Each lives in src/cli/cmd_<name>.c and is
 * listed in the table in main.c. A command returns the process exit status. */
#ifndef SCORCH_COMMANDS_H
#define SCORCH_COMMANDS_H

int cmd_record(int argc, char **argv);
int cmd_server(int argc, char **argv);
int cmd_agent(int argc, char **argv);
int cmd_top(int argc, char **argv);
int cmd_convert(int argc, char **argv);
int cmd_ci(int argc, char **argv);
int cmd_diff(int argc, char **argv);
int cmd_capture(int argc, char **argv);
int cmd_replay(int argc, char **argv);

#endif
