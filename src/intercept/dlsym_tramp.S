/* dlsym as exported by libculprit. It asks cp__dlsym_hook whether the name is a driver entry point culprit
 * wraps; if so it returns the wrapper, otherwise it tail-jumps to glibc's dlsym with the caller's return address
 * still on the stack, so RTLD_NEXT and RTLD_DEFAULT keep meaning "relative to the real caller". */
        .text
        .globl  dlsym
        .type   dlsym, @function
        .p2align 4
dlsym:
        .cfi_startproc
        endbr64                         /* a valid indirect-branch target where IBT is enforced; a no-op else */
        pushq   %rdi
        .cfi_adjust_cfa_offset 8
        pushq   %rsi
        .cfi_adjust_cfa_offset 8
        subq    $8, %rsp
        .cfi_adjust_cfa_offset 8
        call    cp__dlsym_hook@PLT
        addq    $8, %rsp
        .cfi_adjust_cfa_offset -8
        popq    %rsi
        .cfi_adjust_cfa_offset -8
        popq    %rdi
        .cfi_adjust_cfa_offset -8
        testq   %rax, %rax
        jz      1f
        cmpq    $1, %rax                /* CP_DLSYM_NULL: a hooked name the driver does not have */
        jne     2f
        xorl    %eax, %eax
2:
        ret
1:
        movq    cp__real_dlsym@GOTPCREL(%rip), %rax
        movq    (%rax), %rax
        testq   %rax, %rax              /* glibc's dlsym not found (cannot happen with a glibc): answer NULL */
        jz      2b
        jmpq    *%rax
        .cfi_endproc
        .size   dlsym, .-dlsym

        .section .note.GNU-stack,"",@progbits
