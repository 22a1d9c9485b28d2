I
"train*deepflow(Š
w *wŠ
b *bŠ
step*step