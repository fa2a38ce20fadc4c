int low_b(void);
