"""The programs themselves: the one-call baseline, the ReAct agents V1 and V2, their tools and judge."""
