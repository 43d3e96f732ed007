#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <readline/readline.h>
#include <readline/history.h>

/* Accessors for readline's mutable globals: reading them directly is an error in Swift 6 mode. */
static inline void backupctl_rl_set_name(const char *name) { rl_readline_name = name; }
static inline void backupctl_rl_set_completion(rl_completion_func_t *fn) {
    rl_attempted_completion_function = fn;
}
static inline void backupctl_rl_set_attempted_over(int value) { rl_attempted_completion_over = value; }
static inline int backupctl_rl_point(void) { return rl_point; }
static inline const char *backupctl_rl_line_buffer(void) { return rl_line_buffer; }
static inline void backupctl_rl_set_catch_signals(int value) { rl_catch_signals = value; }
static inline void backupctl_rl_set_done(int value) { rl_done = value; }
static inline void backupctl_rl_set_basic_word_break(const char *chars) {
    rl_basic_word_break_characters = (char *)chars;
}
static inline void backupctl_rl_set_getc(rl_getc_func_t *fn) { rl_getc_function = fn; }

/* posix_spawn's close-from action (glibc 2.34+), declared here since spawn.h shows it only to
   _GNU_SOURCE builds: a child (the pager) gets stdin, stdout and stderr, and no other descriptor
   of the console. */
#include <spawn.h>
extern int posix_spawn_file_actions_addclosefrom_np(posix_spawn_file_actions_t *, int);
static inline int backupctl_spawn_close_from(posix_spawn_file_actions_t *actions, int from) {
    return posix_spawn_file_actions_addclosefrom_np(actions, from);
}
