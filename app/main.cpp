// attnscope: GUI by default, headless CLI when --export / --dump-json are given.
int main() { return 0; }
